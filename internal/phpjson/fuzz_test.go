package phpjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRoundTrip checks that whatever Decode accepts, Encode can write, and
// that the written bytes are a fixed point: decoding and re-encoding them
// gives the same bytes (modulo PHP's own -0.0 → "-0" → int 0, see
// requireStable). Seeds are the golden PHP inputs and the plugin fixtures.
//
//	go test ./internal/phpjson/ -run '^$' -fuzz FuzzRoundTrip -fuzztime 60s
func FuzzRoundTrip(f *testing.F) {
	for _, c := range loadGolden(f) {
		if c.Op == "decode" && len(c.In) < 4096 {
			f.Add(b64(f, c.In))
		}
	}
	f.Add([]byte(recordedPayload))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		// We are stricter than encoding/json, never looser.
		require.True(t, json.Valid(data), "accepted input encoding/json rejects: %q", data)
		encoded, err := Encode(v)
		require.NoError(t, err, "input %q", data)
		require.True(t, json.Valid(encoded))
		requireStable(t, v, encoded)
	})
}
