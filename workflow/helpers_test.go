package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// fixtureDir holds rows recorded from the real Queuety plugin after every
// step of a scenario (see its README). Tests skip when it is absent.
const fixtureDir = "../testdata/queuety-plugin"

type fixture struct {
	File      string
	Code      string
	Snapshots []snapshot
}

type snapshot struct {
	After        string
	Workflows    []*phpjson.Object
	Jobs         []*phpjson.Object
	DispatchKeys []*phpjson.Object
}

// fixtureFiles lists every recorded scenario.
func fixtureFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no fixtures at %s", fixtureDir)
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	slices.Sort(files)
	return files
}

// loadFixture reads one scenario with phpjson, so the JSON columns come
// back as the exact strings PDO returned.
func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	v, err := phpjson.Decode(b)
	require.NoError(t, err)
	root := mustObject(t, v)
	f := fixture{File: name, Code: str(t, root, "code")}
	for _, sv := range list(t, root, "snapshots") {
		so := mustObject(t, sv)
		s := snapshot{After: str(t, so, "after")}
		for _, w := range list(t, so, "workflows") {
			s.Workflows = append(s.Workflows, mustObject(t, w))
		}
		for _, j := range list(t, so, "jobs") {
			s.Jobs = append(s.Jobs, mustObject(t, j))
		}
		for _, k := range list(t, so, "workflow_dispatch_keys") {
			s.DispatchKeys = append(s.DispatchKeys, mustObject(t, k))
		}
		f.Snapshots = append(f.Snapshots, s)
	}
	require.NotEmpty(t, f.Snapshots)
	return f
}

// firstRow finds the first snapshot holding workflow id and returns the
// snapshot index and the row.
func (f fixture) firstRow(t *testing.T, id int64) (int, *phpjson.Object) {
	t.Helper()
	for i, s := range f.Snapshots {
		for _, w := range s.Workflows {
			if num(t, w, "id") == id {
				return i, w
			}
		}
	}
	require.Failf(t, "workflow not recorded", "%s has no workflow %d", f.File, id)
	return 0, nil
}

// jobsOf returns the jobs of workflow id in snapshot i, in id order.
func (f fixture) jobsOf(t *testing.T, i int, id int64) []*phpjson.Object {
	t.Helper()
	var out []*phpjson.Object
	for _, j := range f.Snapshots[i].Jobs {
		if wf, ok := phpjson.Get(j, "workflow_id").AsInt64(); ok && wf == id {
			out = append(out, j)
		}
	}
	return out
}

func mustObject(t *testing.T, v phpjson.Value) *phpjson.Object {
	t.Helper()
	o, ok := v.AsObject()
	require.True(t, ok, "want an object, got %s", v.Kind())
	return o
}

func list(t *testing.T, o *phpjson.Object, key string) []phpjson.Value {
	t.Helper()
	v, ok := o.Get(key)
	require.True(t, ok, "missing %q", key)
	l, ok := v.AsList()
	require.True(t, ok, "%q is not a list", key)
	return l
}

func str(t *testing.T, o *phpjson.Object, key string) string {
	t.Helper()
	v, ok := o.Get(key)
	require.True(t, ok, "missing %q", key)
	s, ok := v.AsString()
	require.True(t, ok, "%q is %s, not a string", key, v.Kind())
	return s
}

// nullStr returns a nullable string column ("" for NULL).
func nullStr(t *testing.T, o *phpjson.Object, key string) string {
	t.Helper()
	if phpjson.Get(o, key).IsNull() {
		return ""
	}
	return str(t, o, key)
}

func num(t *testing.T, o *phpjson.Object, key string) int64 {
	t.Helper()
	n, ok := phpjson.Get(o, key).AsInt64()
	require.True(t, ok, "%q is not an integer", key)
	return n
}

// nullNum returns a nullable integer column (0 for NULL).
func nullNum(t *testing.T, o *phpjson.Object, key string) int64 {
	t.Helper()
	if phpjson.Get(o, key).IsNull() {
		return 0
	}
	return num(t, o, key)
}

// decodeObject parses a JSON object literal for a test.
func decodeObject(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	v, err := phpjson.DecodeString(s)
	require.NoError(t, err)
	return mustObject(t, v)
}

// parseState parses a recorded state column.
func parseState(t *testing.T, s string) *State {
	t.Helper()
	st, err := ParseState([]byte(s))
	require.NoError(t, err)
	return st
}

// stepAt returns the typed definition of step i of a state.
func stepAt(t *testing.T, st *State, i int) StepDefinition {
	t.Helper()
	s, ok := st.Step(i)
	require.True(t, ok, "no step %d", i)
	d, err := s.Definition()
	require.NoError(t, err)
	return d
}

// requireJob compares a built job with a recorded jobs row.
func requireJob(t *testing.T, want *phpjson.Object, got StepJob) {
	t.Helper()
	require.Equal(t, str(t, want, "handler"), got.Handler, "handler")
	require.Equal(t, str(t, want, "payload"), string(got.Payload), "payload of %s", got.Handler)
	require.Equal(t, str(t, want, "queue"), got.Queue, "queue of %s", got.Handler)
	require.Equal(t, num(t, want, "priority"), int64(got.Priority), "priority of %s", got.Handler)
	require.Equal(t, num(t, want, "max_attempts"), got.MaxAttempts, "max_attempts of %s", got.Handler)
	require.Equal(t, num(t, want, "step_index"), int64(got.StepIndex), "step_index of %s", got.Handler)
	require.Equal(t, num(t, want, "cost_units"), got.CostUnits, "cost_units of %s", got.Handler)
	require.Equal(t, nullStr(t, want, "concurrency_group"), got.ConcurrencyGroup, "concurrency_group of %s", got.Handler)
	require.Equal(t, nullNum(t, want, "concurrency_limit"), got.ConcurrencyLimit, "concurrency_limit of %s", got.Handler)
}
