package phpjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordedPayload is a job payload exactly as the Queuety plugin stored it
// (jobs.payload of job_payload_encoding.json), with its payload_hash.
const (
	recordedPayload = `{"text":"h\u00e9llo \u2713 \ud83d\ude00","path":"a\/b\\c","html":"<a href='x'>&<\/a>","one":1,"tenth":0.1,"big":9007199254740993,"neg":-5,"empty":[],"list":[1,2],"map":{"k":null,"t":true},"nested":{"e":[]}}`
	recordedSHA256  = "63d3acb3cc6ee153ed0efd0bfdfcf25d62a07d968858ae3c681ed122b090b1da"
)

func mustEncode(tb testing.TB, v Value) string {
	tb.Helper()
	b, err := Encode(v)
	require.NoError(tb, err)
	return string(b)
}

func mustDecode(tb testing.TB, s string) Value {
	tb.Helper()
	v, err := DecodeString(s)
	require.NoError(tb, err, "decoding %q", s)
	return v
}

func TestRecordedPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(recordedPayload))
	require.Equal(t, recordedSHA256, hex.EncodeToString(sum[:]))

	v, err := Decode([]byte(recordedPayload))
	require.NoError(t, err)
	got, err := v.MarshalPHP()
	require.NoError(t, err)
	require.Equal(t, recordedPayload, string(got))
	sum = sha256.Sum256(got)
	require.Equal(t, recordedSHA256, hex.EncodeToString(sum[:]))

	obj, ok := v.AsObject()
	require.True(t, ok)
	require.Equal(t, []string{"text", "path", "html", "one", "tenth", "big", "neg", "empty", "list", "map", "nested"}, obj.Keys())
	text, _ := obj.Get("text")
	s, ok := text.AsString()
	require.True(t, ok)
	require.Equal(t, "héllo ✓ 😀", s)
	big, _ := obj.Get("big")
	n, ok := big.AsInt64()
	require.True(t, ok)
	require.Equal(t, int64(9007199254740993), n)

	// The same payload built from Go values gives the same bytes.
	built := NewObject().
		Set("text", String("héllo ✓ 😀")).
		Set("path", String(`a/b\c`)).
		Set("html", String("<a href='x'>&</a>")).
		Set("one", Int(1)).
		Set("tenth", Float(0.1)).
		Set("big", Int(9007199254740993)).
		Set("neg", Int(-5)).
		Set("empty", List()).
		Set("list", List(Int(1), Int(2))).
		Set("map", ObjectValue(NewObject().Set("k", Null()).Set("t", Bool(true)))).
		Set("nested", ObjectValue(NewObject().Set("e", ObjectValue(NewObject()))))
	require.Equal(t, recordedPayload, mustEncode(t, ObjectValue(built)))
}

// fixtureDir holds rows recorded from the real plugin (a copy of
// shared/fixtures/queuety-plugin, see its README).
const fixtureDir = "../../testdata/queuety-plugin"

// fixtureStrings returns every workflows[].state and jobs[].payload string
// of every fixture file.
func fixtureStrings(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(tb, err)
	var fixture struct {
		Snapshots []struct {
			Workflows []struct {
				State *string `json:"state"`
			} `json:"workflows"`
			Jobs []struct {
				Payload *string `json:"payload"`
			} `json:"jobs"`
		} `json:"snapshots"`
	}
	out := map[string]string{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(tb, err)
		fixture.Snapshots = nil
		require.NoError(tb, json.Unmarshal(raw, &fixture), file)
		for i, snap := range fixture.Snapshots {
			for j, w := range snap.Workflows {
				if w.State != nil {
					out[filepath.Base(file)+": snapshot "+itoa(i)+" workflow "+itoa(j)+" state"] = *w.State
				}
			}
			for j, job := range snap.Jobs {
				if job.Payload != nil {
					out[filepath.Base(file)+": snapshot "+itoa(i)+" job "+itoa(j)+" payload"] = *job.Payload
				}
			}
		}
	}
	require.NotEmpty(tb, out, "fixture directory exists but holds no state or payload strings")
	return out
}

func itoa(i int) string { return Int(int64(i)).Literal() }

func TestPluginFixturesRoundTrip(t *testing.T) {
	t.Parallel()
	for where, s := range fixtureStrings(t) {
		v, err := DecodeString(s)
		require.NoError(t, err, where)
		got, err := Encode(v)
		require.NoError(t, err, where)
		require.Equal(t, s, string(got), where)
	}
}

func TestEncodeValues(t *testing.T) {
	t.Parallel()
	listKeys := NewObject().Set("0", String("a")).Set("1", String("b"))
	for _, tc := range []struct {
		name string
		v    Value
		want string
	}{
		{"zero Value", Value{}, `null`},
		{"null", Null(), `null`},
		{"true", Bool(true), `true`},
		{"false", Bool(false), `false`},
		{"int", Int(-42), `-42`},
		{"int min", Int(math.MinInt64), `-9223372036854775808`},
		{"float integral", Float(10), `10`},
		{"float tenth", Float(0.1), `0.1`},
		{"float -0", Float(math.Copysign(0, -1)), `-0`},
		{"float 1e16", Float(1e16), `10000000000000000`},
		{"float 1e17", Float(1e17), `1.0e+17`},
		{"float 1e-5", Float(1e-5), `1.0e-5`},
		{"float 0.0001", Float(0.0001), `0.0001`},
		{"string escapes", String("a/b\\c\"d\n\x01\x7f<>&'"), "\"a\\/b\\\\c\\\"d\\n\\u0001\x7f<>&'\""},
		{"string unicode", String("é\u2028😀"), `"\u00e9\u2028\ud83d\ude00"`},
		{"empty list", List(), `[]`},
		{"nil list", List(nil...), `[]`},
		{"empty object", ObjectValue(NewObject()), `[]`},
		{"nil object", ObjectValue(nil), `[]`},
		{"zero Object", ObjectValue(&Object{}), `[]`},
		{"list keys", ObjectValue(listKeys), `["a","b"]`},
		{"hole", ObjectValue(NewObject().Set("0", Int(1)).Set("2", Int(2))), `{"0":1,"2":2}`},
		{"non-canonical key", ObjectValue(NewObject().Set("0", Int(1)).Set("01", Int(2))), `{"0":1,"01":2}`},
		{"nested", List(ObjectValue(NewObject().Set("a", List(Null())))), `[{"a":[null]}]`},
	} {
		require.Equal(t, tc.want, mustEncode(t, tc.v), tc.name)
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    Value
		want error
	}{
		{"NaN", Float(math.NaN()), ErrInfOrNaN},
		{"Inf", List(Float(math.Inf(-1))), ErrInfOrNaN},
		{"bad string", String("\xff"), ErrInvalidUTF8},
		{"bad key", ObjectValue(NewObject().Set("\xc3", Null())), ErrInvalidUTF8},
	} {
		_, err := Encode(tc.v)
		require.ErrorIs(t, err, tc.want, tc.name)
	}

	// A self-referencing object must fail, not overflow the stack.
	o := NewObject()
	o.Set("self", ObjectValue(o))
	_, err := Encode(ObjectValue(o))
	require.ErrorIs(t, err, ErrDepth)

	// Append leaves the caller's buffer as it was on error.
	dst := []byte("prefix")
	out, err := Append(dst, List(Int(1), Float(math.NaN())))
	require.Error(t, err)
	require.Equal(t, "prefix", string(out))
	out, err = Append(dst, List(Int(1)))
	require.NoError(t, err)
	require.Equal(t, "prefix[1]", string(out))
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		offset int
	}{
		{``, 0},
		{`[1,]`, 3},
		{`{"a":1,}`, 7},
		{`[1] x`, 4},
		{`01`, 1},
		{`1.`, 2},
		{`"abc`, 4},
		{"\"a\x01\"", 2},
		{"[\"ok\", \"\xffx\"]", 8},
		{`"\ud800"`, 1},
		{`"\q"`, 1},
		{`tru`, 0},
		{`[1e400]`, 1},
		{`{"a" 1}`, 5},
	} {
		_, err := DecodeString(tc.in)
		var se *SyntaxError
		require.ErrorAs(t, err, &se, "input %q", tc.in)
		require.Equal(t, tc.offset, se.Offset, "input %q: %v", tc.in, err)
		require.Contains(t, err.Error(), "byte offset")
	}
}

func TestDecodeDuplicateKeys(t *testing.T) {
	t.Parallel()
	v := mustDecode(t, `{"a":1,"b":2,"a":3}`)
	require.Equal(t, `{"a":3,"b":2}`, mustEncode(t, v))
	obj, _ := v.AsObject()
	require.Equal(t, []string{"a", "b"}, obj.Keys())

	// Escaped and raw spellings of a key are the same key.
	require.Equal(t, `{"a":2}`, mustEncode(t, mustDecode(t, `{"a":1,"\u0061":2}`)))

	// Large objects switch to an index; duplicates still keep position.
	var doc bytes.Buffer
	doc.WriteString("{")
	for i := range 40 {
		doc.WriteString(`"k` + itoa(i) + `":` + itoa(i) + `,`)
	}
	doc.WriteString(`"k3":"last"}`)
	obj, _ = mustDecode(t, doc.String()).AsObject()
	require.Equal(t, 40, obj.Len())
	require.Equal(t, "k3", obj.Keys()[3])
	got, _ := obj.Get("k3")
	require.Equal(t, `"last"`, mustEncode(t, got))
}

func TestObject(t *testing.T) {
	t.Parallel()
	var nilObj *Object
	require.Zero(t, nilObj.Len())
	_, ok := nilObj.Get("x")
	require.False(t, ok)
	require.Empty(t, nilObj.Keys())

	for _, n := range []int{5, 40} { // below and above indexThreshold
		o := NewObject()
		for i := range n {
			o.Set("k"+itoa(i), Int(int64(i)))
		}
		o.Set("k2", String("replaced")) // keeps its position
		require.Equal(t, n, o.Len())
		require.Equal(t, "k2", o.Keys()[2])

		require.True(t, o.Delete("k1"))
		require.False(t, o.Delete("k1"))
		require.Equal(t, n-1, o.Len())
		_, ok := o.Get("k1")
		require.False(t, ok)
		v, ok := o.Get("k2")
		require.True(t, ok)
		s, _ := v.AsString()
		require.Equal(t, "replaced", s)
		v, ok = o.Get("k" + itoa(n-1))
		require.True(t, ok)
		last, _ := v.AsInt64()
		require.Equal(t, int64(n-1), last)

		// A re-added key goes to the end, as in PHP.
		o.Set("k1", Null())
		require.Equal(t, "k1", o.Keys()[n-1])

		var keys []string
		for k := range o.All() {
			keys = append(keys, k)
			if len(keys) == 3 {
				break
			}
		}
		require.Equal(t, []string{"k0", "k2", "k3"}, keys)
	}

	// Deleting can turn an object into a PHP list, and back.
	o := NewObject().Set("0", Int(0)).Set("1", Int(1)).Set("x", Int(2))
	require.Equal(t, `{"0":0,"1":1,"x":2}`, mustEncode(t, ObjectValue(o)))
	o.Delete("x")
	require.Equal(t, `[0,1]`, mustEncode(t, ObjectValue(o)))
	o.Delete("0")
	o.Set("0", Int(0))
	require.Equal(t, `{"1":1,"0":0}`, mustEncode(t, ObjectValue(o)))
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	v := mustDecode(t, `{"s":"x","i":9007199254740993,"f":1.0,"h":1.5,"e":1E2,"big":1e19,"neg0":-0,"b":false,"n":null,"l":[1],"o":{"0":"a","1":"b"},"eo":{},"el":[]}`)
	o, ok := v.AsObject()
	require.True(t, ok)
	get := func(k string) Value {
		x, ok := o.Get(k)
		require.True(t, ok, k)
		return x
	}

	s, ok := get("s").AsString()
	require.True(t, ok)
	require.Equal(t, "x", s)
	_, ok = get("i").AsString()
	require.False(t, ok, "numbers are not strings")

	i := get("i")
	require.Equal(t, KindNumber, i.Kind())
	require.True(t, i.IsInt())
	n, ok := i.AsInt64()
	require.True(t, ok)
	require.Equal(t, int64(9007199254740993), n)
	require.Equal(t, "9007199254740993", i.Literal())

	n, ok = get("f").AsInt64()
	require.True(t, ok, "integral float")
	require.Equal(t, int64(1), n)
	require.False(t, get("f").IsInt())
	_, ok = get("h").AsInt64()
	require.False(t, ok)
	_, ok = get("big").AsInt64()
	require.False(t, ok, "out of int64 range")
	f, ok := get("h").AsFloat64()
	require.True(t, ok)
	require.Equal(t, 1.5, f)
	require.Equal(t, "1E2", get("e").Literal(), "the literal is kept")
	require.Equal(t, "100", mustEncode(t, get("e")))
	require.Equal(t, "0", mustEncode(t, get("neg0")))
	require.Equal(t, "1.5", Float(1.5).Literal())
	require.Equal(t, "-7", Int(-7).Literal())
	require.Empty(t, String("x").Literal())

	b, ok := get("b").AsBool()
	require.True(t, ok)
	require.False(t, b)
	require.True(t, get("n").IsNull())
	require.Equal(t, KindNull, get("n").Kind())

	l, ok := get("l").AsList()
	require.True(t, ok)
	require.Len(t, l, 1)
	l, ok = get("o").AsList()
	require.True(t, ok, "PHP sees a list")
	require.Len(t, l, 2)
	_, ok = get("l").AsObject()
	require.False(t, ok)
	_, ok = get("s").AsList()
	require.False(t, ok)
	_, ok = v.AsList()
	require.False(t, ok)

	for _, k := range []string{"eo", "el"} {
		require.True(t, get(k).IsEmptyArray(), k)
		eo, ok := get(k).AsObject()
		require.True(t, ok, k)
		require.Zero(t, eo.Len())
		el, ok := get(k).AsList()
		require.True(t, ok, k)
		require.Empty(t, el)
	}
	require.False(t, get("l").IsEmptyArray())
	require.False(t, get("n").IsEmptyArray())
	require.Equal(t, "object", KindObject.String())
}

func TestNumberLiteral(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]string{
		"0": "0", "-0": "0", "-0.0": "-0", "12": "12", "1.50": "1.5", "1e2": "100", "1E+2": "100",
		"9223372036854775807": "9223372036854775807", "9223372036854775808": "9.223372036854776e+18",
		"1e-400": "0", "0.00001": "1.0e-5",
	} {
		v, err := NumberLiteral(lit)
		require.NoError(t, err, lit)
		require.Equal(t, lit, v.Literal())
		require.Equal(t, want, mustEncode(t, v), lit)
	}
	for _, lit := range []string{"", "-", "+1", "01", "1.", ".1", "1e", "0x1", " 1", "1 ", "NaN", "1e400", "1_000"} {
		_, err := NumberLiteral(lit)
		require.Error(t, err, "%q", lit)
	}
}

func TestFromGoToGo(t *testing.T) {
	t.Parallel()
	sub := NewObject().Set("z", Int(1)).Set("a", Int(2))
	v, err := FromGo(map[string]any{
		"b": []any{nil, true, "s", 1, int8(-2), uint64(math.MaxUint64), float32(0.1), 0.5},
		"a": json.Number("1.0"),
		"c": json.RawMessage(`{"x":[]}`),
		"d": sub,
		"e": []Value{Int(3)},
		"f": map[string]any{},
	})
	require.NoError(t, err)
	require.Equal(t, `{"a":1,"b":[null,true,"s",1,-2,1.8446744073709552e+19,0.1,0.5],"c":{"x":[]},"d":{"z":1,"a":2},"e":[3],"f":[]}`, mustEncode(t, v))

	for _, bad := range []any{struct{}{}, []int{1}, json.Number("x"), json.RawMessage(`{`), map[string]any{"k": make(chan int)}} {
		_, err := FromGo(bad)
		require.Error(t, err, "%T", bad)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	_, err = FromGo(cyclic)
	require.ErrorIs(t, err, ErrDepth)

	got := mustDecode(t, `{"i":1,"f":1.0,"s":"x","l":[true,null],"o":{"k":{}}}`).ToGo()
	require.Equal(t, map[string]any{
		"i": int64(1), "f": 1.0, "s": "x", "l": []any{true, nil}, "o": map[string]any{"k": map[string]any{}},
	}, got)

	back, err := FromGo(got)
	require.NoError(t, err)
	require.Equal(t, `{"f":1,"i":1,"l":[true,null],"o":{"k":[]},"s":"x"}`, mustEncode(t, back), "keys come back sorted")
}

func TestJSONInterfaces(t *testing.T) {
	t.Parallel()
	type row struct {
		ID      int   `json:"id"`
		Payload Value `json:"payload"`
	}
	var r row
	require.NoError(t, json.Unmarshal([]byte(`{"id":7,"payload":{"b":1,"a":"/é"}}`), &r))
	require.Equal(t, `{"b":1,"a":"\/\u00e9"}`, mustEncode(t, r.Payload))

	out, err := json.Marshal(r)
	require.NoError(t, err)
	require.Equal(t, `{"id":7,"payload":{"b":1,"a":"\/\u00e9"}}`, string(out))

	// json.Marshal HTML-escapes marshaler output; an Encoder without HTML
	// escaping keeps PHP's bytes.
	html := row{Payload: String("<&>")}
	out, err = json.Marshal(html)
	require.NoError(t, err)
	require.Equal(t, `{"id":0,"payload":"\u003c\u0026\u003e"}`, string(out))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(html))
	require.Equal(t, `{"id":0,"payload":"<&>"}`+"\n", buf.String())

	require.NoError(t, json.Unmarshal([]byte(`{"payload":null}`), &r))
	require.True(t, r.Payload.IsNull())
	require.Error(t, json.Unmarshal([]byte("{\"payload\":\"\xff\"}"), &r), "invalid UTF-8 is rejected")
}

func TestDecodeDepth(t *testing.T) {
	t.Parallel()
	nest := func(n int) string {
		return string(slices.Repeat([]byte("["), n)) + string(slices.Repeat([]byte("]"), n))
	}
	v, err := DecodeString(nest(maxDecodeDepth))
	require.NoError(t, err)
	_, err = Encode(v)
	require.NoError(t, err)
	_, err = DecodeString(nest(maxDecodeDepth + 1))
	require.ErrorContains(t, err, "nesting depth")
}
