package machine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StateMachine reads priority and max_attempts with (int) too.
func TestMachineIntCastsLikePHP(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{`"1e1"`: 10, `" 3"`: 3, `"2abc"`: 2, `1e19`: -8446744073709551616, `[]`: 7, `null`: 7} {
		v, err := phpjson.DecodeString(in)
		require.NoError(t, err)
		require.Equal(t, want, phpInt(v, 7), in)
	}
}

// StateMachineBuilder trims names with PHP's trim(): NUL goes, \f stays.
// Earlier builds used Go's TrimSpace (the other way round for both).
func TestMachineBuilderTrimsLikePHP(t *testing.T) {
	t.Parallel()
	def, _, err := NewBuilder("m").OnQueue("\x00jobs").State("\x00wait", "").On(" go\x00", "end\f", "", "").State("end\f", "completed").Definition()
	require.NoError(t, err)
	d, err := phpjson.Decode(def)
	require.NoError(t, err)
	o, _ := d.AsObject()
	require.Equal(t, "jobs", phpjson.ToString(phpjson.Get(o, "queue")))
	states := phpjson.AsArray(phpjson.Get(o, "states"))
	require.Equal(t, []string{"wait", "end\f"}, states.Keys())
	tr := phpjson.Values(phpjson.Get(phpjson.AsArray(phpjson.Get(states, "wait")), "transitions"))
	require.Len(t, tr, 1)
	require.Equal(t, "go", phpjson.ToString(phpjson.Get(phpjson.AsArray(tr[0]), "event")))
}
