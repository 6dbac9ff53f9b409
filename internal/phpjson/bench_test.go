package phpjson

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// largeDoc is a bigger, more varied document than the recorded payload:
// nested objects, lists, long and escaped strings, ints and floats.
func largeDoc(tb testing.TB) string {
	tb.Helper()
	items := NewObject()
	for i := range 50 {
		items.Set("step_"+itoa(i), ObjectValue(NewObject().
			Set("id", Int(int64(i)*1_000_003)).
			Set("score", Float(float64(i)/7)).
			Set("ok", Bool(i%2 == 0)).
			Set("tags", List(String("a/b"), String("héllo"), String("plain text value"))).
			Set("note", String("The quick brown fox jumps over the lazy dog <&> \"quoted\""))))
	}
	b, err := Encode(ObjectValue(items))
	require.NoError(tb, err)
	return string(b)
}

func benchmarkDocs(b *testing.B) map[string]string {
	return map[string]string{"payload": recordedPayload, "large": largeDoc(b)}
}

func BenchmarkDecode(b *testing.B) {
	for name, doc := range benchmarkDocs(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeString(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for name, doc := range benchmarkDocs(b) {
		v := mustDecode(b, doc)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(doc))
			for b.Loop() {
				var err error
				if buf, err = Append(buf[:0], v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
