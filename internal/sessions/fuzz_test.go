package sessions

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

var optionSeeds = []string{
	`{"session_id":"gpu-render","queue":"gpu-activities","requirements":["gpu:nvidia-l4"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":false}`,
	`{"session_id":" s ","connection":" c ","requirements":[" a ","a","",null],"lease_seconds":"120","ttl_seconds":0,"create_if_missing":1}`,
	`{"session_id":"s","lease_seconds":2147483648,"ttl_seconds":1.0,"max_concurrent_activities":-1}`,
	`{"session_id":"s","requirements":{"x":"a","y":"b"},"create_if_missing":"0","allow_reacquire_after_failure":"yes"}`,
	`{"session_id":"s","requirements":"gpu","queue":"","connection":7}`,
	`{"session_id":""}`, `{"session_id":7}`, `{}`, `[]`, `["s"]`, `null`, `"s"`, `7`,
	`{"session_id":"s","lease_seconds":"0012","ttl_seconds":"99999999999","max_concurrent_activities":" 3"}`,
}

func snapshotBytes(t *testing.T, v phpjson.Value) string {
	t.Helper()
	b, err := phpjson.Encode(v)
	require.NoError(t, err)
	return string(b)
}

// fuzzOptionValues fuzzes fn with every input that decodes as PHP JSON,
// seeded with optionSeeds.
func fuzzOptionValues(f *testing.F, fn func(t *testing.T, data []byte, v phpjson.Value)) {
	for _, s := range optionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := phpjson.Decode(data); err == nil {
			fn(t, data, v)
		}
	})
}

// FuzzParseOptions: worker_session objects come from step definitions, the
// CLI and HTTP bodies. What ParseOptions accepts validates, and its
// snapshot (what the builder stores) parses back to the same snapshot,
// strictly and leniently; what it refuses is a *ValidationError naming at
// least one problem.
//
//	go test ./internal/sessions -run '^$' -fuzz '^FuzzParseOptions$' -fuzztime 60s
func FuzzParseOptions(f *testing.F) {
	fuzzOptionValues(f, func(t *testing.T, data []byte, v phpjson.Value) {
		o, err := ParseOptions(v)
		if err != nil {
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%T %v", err, err)
			require.NotEmpty(t, ve.Errors)
			require.NotEmpty(t, ve.Error())
			return
		}
		require.NoError(t, o.Validate(), "accepted options do not validate: %s", data)
		snap := o.Snapshot()
		again, err := ParseOptions(snap)
		require.NoError(t, err, "the snapshot %s is refused", snapshotBytes(t, snap))
		require.Equal(t, snapshotBytes(t, snap), snapshotBytes(t, again.Snapshot()))
		stored, err := ParseStored(snap)
		require.NoError(t, err)
		require.Equal(t, o.Normalize(), stored.Normalize(), "strict and lenient readings of %s differ", snapshotBytes(t, snap))
	})
}

// FuzzParseStored: stored snapshots are read leniently. What it accepts
// normalizes to positive limits and a trimmed id, and the normalized
// snapshot (jobs.worker_session) reads back to the same options.
func FuzzParseStored(f *testing.F) {
	fuzzOptionValues(f, func(t *testing.T, data []byte, v phpjson.Value) {
		o, err := ParseStored(v)
		if err != nil {
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%T %v", err, err)
			require.NotEmpty(t, ve.Errors)
			return
		}
		n := o.Normalize()
		require.NotEmpty(t, n.SessionID)
		require.Equal(t, phpjson.Trim(n.SessionID), n.SessionID)
		for _, x := range []int{n.LeaseSeconds, n.TTLSeconds, n.MaxConcurrentActivities} {
			require.True(t, x >= 1 && x <= MaxOptionInt, "limit %d", x)
		}
		for _, r := range n.Requirements {
			require.NotEmpty(t, r)
			require.Equal(t, phpjson.Trim(r), r)
		}
		snap := n.Snapshot()
		back, err := ParseStored(snap)
		require.NoError(t, err, "the normalized snapshot %s is refused", snapshotBytes(t, snap))
		require.Equal(t, n, back.Normalize())
		strict, err := ParseOptions(snap)
		require.NoError(t, err, "the normalized snapshot %s is refused by the strict parser", snapshotBytes(t, snap))
		require.Equal(t, n, strict.Normalize())
	})
}
