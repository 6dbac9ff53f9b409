package phppool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReducersReturnTheirOutput(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx := callCtx(t)
	agg := `{"total":2,"settled":true,"results":[{"index":0,"output":{"square":4}},{"index":1,"output":{"square":9}}],"failures":[]}`
	state := `{"squares":` + agg + `}`

	out, err := p.RunReducer(ctx, "SumSquaresReducer", []byte(state), []byte(agg), []byte(`[]`))
	require.NoError(t, err)
	require.Equal(t, `{"sum":13,"reducer_saw_squares":true,"reducer_saw_reserved":false}`, string(out), "no payload: called with two arguments")

	out, err = p.RunReducer(ctx, "SumSquaresReducer", []byte(state), []byte(agg), []byte(`{"label":"x"}`))
	require.NoError(t, err)
	require.Contains(t, string(out), `"label":"x"`, "the payload is the third argument")

	// A name registered with Handlers::register, and an empty payload left out.
	out, err = p.RunReducer(ctx, "sum_reducer", []byte(state), []byte(agg), nil)
	require.NoError(t, err)
	require.Contains(t, string(out), `"sum":13`)

	require.Equal(t, 1, p.Stats().Spawns)
}

func TestReducerFailures(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx := callCtx(t)
	agg := []byte(`{"results":[]}`)

	_, err := p.RunReducer(ctx, "ThrowingReducer", []byte(`[]`), agg, nil)
	e := phpError(t, err)
	require.Equal(t, "LogicException", e.Class)
	require.Equal(t, "reducer failed", e.Message)
	require.Contains(t, e.Trace, "#0 ")

	_, err = p.RunReducer(ctx, "NotACompensation", []byte(`[]`), agg, nil)
	require.Equal(t, "For-each reducer 'NotACompensation' must implement reduce().", phpError(t, err).Message)

	_, err = p.RunReducer(ctx, "NoSuchReducer", []byte(`[]`), agg, nil)
	require.Equal(t, "For-each reducer class 'NoSuchReducer' not found.", phpError(t, err).Message)

	require.Equal(t, 1, p.Stats().Spawns, "failures do not cost the process")
}

func TestConditionsReturnWhetherTheyMatch(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx := callCtx(t)

	m, err := p.RunCondition(ctx, "ReachedCondition", []byte(`{"n":2}`), nil)
	require.NoError(t, err)
	require.False(t, m)
	m, err = p.RunCondition(ctx, "ReachedCondition", []byte(`{"n":3}`), []byte(`[]`))
	require.NoError(t, err)
	require.True(t, m)
	m, err = p.RunCondition(ctx, "ReachedCondition", []byte(`{"n":3}`), []byte(`{"at":5}`))
	require.NoError(t, err)
	require.False(t, m, "the payload is the second argument")

	m, err = p.RunCondition(ctx, "n_is_even", []byte(`{"n":4}`), nil)
	require.NoError(t, err)
	require.True(t, m, "a registered callable")

	_, err = p.RunCondition(ctx, "ThrowingCondition", []byte(`[]`), nil)
	e := phpError(t, err)
	require.Equal(t, "UnexpectedValueException", e.Class)
	require.Equal(t, "condition failed", e.Message)

	_, err = p.RunCondition(ctx, "DuckCondition", []byte(`[]`), nil)
	require.Equal(t, `Repeat condition 'DuckCondition' must implement Queuety\Contracts\RepeatCondition.`, phpError(t, err).Message)

	_, err = p.RunCondition(ctx, "NoSuchCondition", []byte(`[]`), nil)
	require.Equal(t, "Repeat condition class 'NoSuchCondition' not found.", phpError(t, err).Message)

	require.Equal(t, 1, p.Stats().Spawns)
}

func TestCompensationsRunAndReportErrors(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx := callCtx(t)
	marker := filepath.Join(t.TempDir(), "marker")

	require.NoError(t, p.RunCompensation(ctx, "MarkerCompensation", []byte(`{"marker":`+quote(marker)+`,"n":1}`), nil))
	require.NoError(t, p.RunCompensation(ctx, "MarkerCompensation", []byte(`{"n":2}`), []byte(`{"marker":`+quote(marker)+`}`)))
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	require.JSONEq(t, `{"class":"MarkerCompensation","state":{"marker":`+quote(marker)+`,"n":1},"payload":[]}`, lines[0])
	require.JSONEq(t, `{"class":"MarkerCompensation","state":{"n":2},"payload":{"marker":`+quote(marker)+`}}`, lines[1])

	err = p.RunCompensation(ctx, "ThrowingCompensation", []byte(`[]`), nil)
	e := phpError(t, err)
	require.Equal(t, "RuntimeException", e.Class)
	require.Equal(t, "compensation failed", e.Message)

	err = p.RunCompensation(ctx, "NotACompensation", []byte(`[]`), nil)
	require.Equal(t, `Compensation 'NotACompensation' must implement Queuety\Contracts\Compensation.`, phpError(t, err).Message)

	require.NoError(t, p.RunCompensation(ctx, "NoSuchCompensation", []byte(`[]`), nil), "skipped, as the plugin skips it")

	// Older kinds still run on the same process.
	out, err := runStep(t, p, stepRow(1, "DoubleStep", 1), `{"n":2}`)
	require.NoError(t, err)
	require.Equal(t, `{"doubled":4}`, string(out))
	require.NoError(t, handle(t, p, 2, "ok", ""))
	require.Equal(t, 1, p.Stats().Spawns)
}

func TestACallablePastItsContextIsKilled(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// "sleeps" is a registered callable: it gets the state.
	err := p.RunCompensation(ctx, "sleeps", []byte(`{"ms":5000}`), nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	m, err := p.RunCondition(callCtx(t), "ReachedCondition", []byte(`{"n":9}`), nil)
	require.NoError(t, err)
	require.True(t, m)
	require.Equal(t, 1, p.Stats().Kills)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
