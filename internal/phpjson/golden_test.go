package phpjson

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenCase is one line of testdata/golden.jsonl, written by real PHP 8.2:
//
//	php internal/phpjson/testdata/gen_golden.php > internal/phpjson/testdata/golden.jsonl
//
// See testdata/README.md for the format. Out is nil where PHP failed.
type goldenCase struct {
	Op    string  `json:"op"`
	Name  string  `json:"name"`
	In    string  `json:"in"`
	Out   *string `json:"out"`
	Stage string  `json:"stage"`
	Err   string  `json:"err"`
}

func loadGolden(tb testing.TB) []goldenCase {
	tb.Helper()
	f, err := os.Open("testdata/golden.jsonl")
	require.NoError(tb, err)
	defer f.Close()
	var cases []goldenCase
	dec := json.NewDecoder(f)
	for {
		var c goldenCase
		if err := dec.Decode(&c); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(tb, err)
		}
		cases = append(cases, c)
	}
	require.NotEmpty(tb, cases)
	return cases
}

func b64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(tb, err)
	return b
}

func TestGolden(t *testing.T) {
	t.Parallel()
	byOp := map[string][]goldenCase{}
	for _, c := range loadGolden(t) {
		byOp[c.Op] = append(byOp[c.Op], c)
	}
	checks := map[string]func(t *testing.T, c goldenCase, want []byte){
		"decode":     checkGoldenDecode,
		"float":      checkGoldenFloat,
		"int":        checkGoldenInt,
		"string":     checkGoldenString,
		"substitute": checkGoldenSubstitute,
		"nest":       checkGoldenNest,
	}
	for op := range byOp {
		require.Contains(t, checks, op, "unknown op in golden file")
	}
	for op, check := range checks {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, byOp[op])
			for _, c := range byOp[op] {
				var want []byte
				if c.Out != nil {
					want = b64(t, *c.Out)
				}
				check(t, c, want)
			}
		})
	}
}

func checkGoldenDecode(t *testing.T, c goldenCase, want []byte) {
	in := b64(t, c.In)
	v, err := Decode(in)
	if c.Out == nil && c.Stage == "decode" {
		require.Error(t, err, "%s: PHP rejects %q (%s)", c.Name, in, c.Err)
		return
	}
	if c.Out == nil {
		// PHP decoded it but could not encode it (INF): we refuse at one of
		// the two steps too.
		if err == nil {
			_, err = Encode(v)
		}
		require.Error(t, err, "%s: PHP cannot round-trip %q (%s)", c.Name, in, c.Err)
		return
	}
	require.NoError(t, err, "%s: PHP accepts %q", c.Name, in)
	got, err := Encode(v)
	require.NoError(t, err, c.Name)
	require.Equal(t, string(want), string(got), "%s: input %q", c.Name, in)

	requireStable(t, v, want)
}

func checkGoldenFloat(t *testing.T, c goldenCase, want []byte) {
	raw, err := hex.DecodeString(c.In)
	require.NoError(t, err)
	require.Len(t, raw, 8)
	// PHP's pack('E') is big-endian.
	var bits uint64
	for _, b := range raw {
		bits = bits<<8 | uint64(b)
	}
	v := Float(math.Float64frombits(bits))
	got, err := Encode(v)
	if c.Out == nil {
		require.ErrorIs(t, err, ErrInfOrNaN, c.Name)
		return
	}
	require.NoError(t, err, c.Name)
	require.Equal(t, string(want), string(got), "%s: bits %s", c.Name, c.In)
	require.Equal(t, string(want), v.Literal(), c.Name)

	// PHP's output read back as a literal is the same float (or the same
	// number as an int, for integral values PHP wrote without a point).
	back, err := NumberLiteral(string(want))
	require.NoError(t, err, c.Name)
	f, ok := back.AsFloat64()
	require.True(t, ok)
	if !back.IsInt() {
		require.Equal(t, bits, math.Float64bits(f), c.Name)
	}
}

func checkGoldenInt(t *testing.T, c goldenCase, want []byte) {
	n, err := strconv.ParseInt(c.In, 10, 64)
	require.NoError(t, err)
	got, err := Encode(Int(n))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), c.Name)
}

func checkGoldenString(t *testing.T, c goldenCase, want []byte) {
	in := string(b64(t, c.In))
	got, err := Encode(String(in))
	if c.Out == nil {
		require.ErrorIs(t, err, ErrInvalidUTF8, "%s: %q", c.Name, in)
		_, err = AppendString(nil, in)
		require.ErrorIs(t, err, ErrInvalidUTF8, c.Name)
		return
	}
	require.NoError(t, err, c.Name)
	require.Equal(t, string(want), string(got), "%s: %q", c.Name, in)
	require.Equal(t, string(want), string(EncodeString(in)), c.Name)
}

func checkGoldenSubstitute(t *testing.T, c goldenCase, want []byte) {
	in := string(b64(t, c.In))
	require.NotNil(t, c.Out, "substitution never fails")
	require.Equal(t, string(want), string(EncodeString(in)), "%s: %q", c.Name, in)
}

func checkGoldenNest(t *testing.T, c goldenCase, want []byte) {
	n, err := strconv.Atoi(c.In)
	require.NoError(t, err)
	v := List()
	for i := 1; i < n; i++ {
		v = List(v)
	}
	got, err := Encode(v)
	if c.Out == nil {
		require.ErrorIs(t, err, ErrDepth, c.Name)
		return
	}
	require.NoError(t, err, c.Name)
	require.Equal(t, string(want), string(got), c.Name)
}
