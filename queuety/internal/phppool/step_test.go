package phppool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

func stepRow(id int64, handler string, attempt int) *store.JobRow {
	return &store.JobRow{ID: id, Queue: "default", Handler: handler, Payload: "[]", Attempts: attempt, MaxAttempts: 3}
}

func runStep(t *testing.T, p *phppool.Pool, row *store.JobRow, state string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return p.HandleStep(ctx, row, []byte(state))
}

func TestStepsReturnTheirOutput(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)

	out, err := runStep(t, p, stepRow(1, "AddStep", 1), `{"n":3,"_steps":[{"type":"single","class":"AddStep"}],"_current_step":0}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":4,"added_by":"php","saw_steps":true}`, string(out), "the full state, reserved keys included")

	out, err = runStep(t, p, stepRow(2, "DoubleStep", 1), `{"n":21}`)
	require.NoError(t, err)
	require.Equal(t, `{"doubled":42}`, string(out))

	out, err = runStep(t, p, stepRow(3, "EmptyStep", 1), `[]`)
	require.NoError(t, err)
	require.Equal(t, `[]`, string(out), "an empty array, printing to stdout on the way")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err = p.HandleItem(ctx, stepRow(4, "SquareItem", 1), []byte(`{"base":"b","items":[2,7]}`), []byte(`7`), 1)
	require.NoError(t, err)
	require.Equal(t, `{"square":49,"index":1,"base":"b"}`, string(out))

	// A class that is a Step but not a ForEachHandler runs handle() for an item.
	out, err = p.HandleItem(ctx, stepRow(5, "DoubleStep", 1), []byte(`{"n":1}`), []byte(`"x"`), 0)
	require.NoError(t, err)
	require.Equal(t, `{"doubled":2}`, string(out))

	// Plain jobs still run on the same process.
	require.NoError(t, handle(t, p, 6, "ok", ""))
	require.Equal(t, 1, p.Stats().Spawns)
}

func TestAThrowingStepFailsWithPHPsClassAndMessage(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)

	_, err := runStep(t, p, stepRow(1, "ThrowStep", 1), `{"n":5}`)
	e := phpError(t, err)
	require.Equal(t, "DomainException", e.Class)
	require.Equal(t, "step failed at n=5", e.Message)
	require.Contains(t, e.Trace, "#0 ")

	_, err = runStep(t, p, stepRow(2, "GreetHandler", 1), `[]`)
	e = phpError(t, err)
	require.Equal(t, "RuntimeException", e.Class)
	require.Contains(t, e.Message, "must implement Step")

	_, err = runStep(t, p, stepRow(3, "NoSuchStep", 1), `[]`)
	e = phpError(t, err)
	require.Equal(t, "Handler not found: NoSuchStep", e.Message)

	require.Equal(t, 1, p.Stats().Spawns, "failures do not cost the process")
}

func TestACrashMidStepFailsItAndAFreshProcessTakesOver(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	before := p.Stats().PIDs[0]

	_, err := runStep(t, p, stepRow(1, "ExitStep", 1), `{"n":1}`)
	e := phpError(t, err)
	require.Equal(t, phppool.ClassWorkerCrashed, e.Class)
	require.Contains(t, e.Message, "PHP worker "+itoa(before)+" exited during the job: exit status 3")

	out, err := runStep(t, p, stepRow(1, "CrashOnceStep", 2), `{"n":1}`)
	require.NoError(t, err, "the retry runs in a fresh process")
	require.Equal(t, `{"recovered":true}`, string(out))
	st := p.Stats()
	require.NotEqual(t, before, st.PIDs[0])
	require.Equal(t, 1, st.Crashes)
}

func TestAStepPastItsContextIsKilled(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// A registered callable runs as a step too, with the state.
	_, err := p.HandleStep(ctx, stepRow(1, "sleeps", 1), []byte(`{"ms":5000}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	out, err := runStep(t, p, stepRow(2, "DoubleStep", 1), `{"n":2}`)
	require.NoError(t, err)
	require.Equal(t, `{"doubled":4}`, string(out))
	require.Equal(t, 1, p.Stats().Kills)
}
