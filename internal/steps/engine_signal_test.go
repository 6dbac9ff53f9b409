package steps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// Signals: Queuety's SignalTest (spec §12), and the poller PHP lacks.

func (env *engineEnv) signal(id int64, name string, payload *phpjson.Object) {
	env.T.Helper()
	require.NoError(env.T, env.Engine.Signal(env.Ctx(), id, name, payload))
}

func (env *engineEnv) signalRows(id int64) []string {
	var rows []string
	require.NoError(env.T, env.DB.Select(&rows, "SELECT CONCAT(signal_name, ' ', payload) FROM `"+env.Store.Tables()["signals"]+"` WHERE workflow_id = ? ORDER BY id", id))
	return rows
}

func TestEngineSignalWait(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("approve").Then("IncStep").WaitForSignal("approval").Then("IncStep"), enginetest.Obj("n", 0))
	env.RunOf(id)
	wf := env.Workflow(id)
	require.Equal(t, "waiting_for_signal", wf.Status)
	require.Equal(t, 1, wf.CurrentStep)
	require.Empty(t, env.PendingOf(id))
	require.Equal(t, `{"type":"signal","step_index":1,"wait_mode":"all","result_key":null,"waiting_for":["approval"],"step_name":"wait_for_approval","match_payload":[]}`, env.WaitJSON(id))

	env.signal(id, "other", enginetest.Obj("x", 1))
	require.Equal(t, "waiting_for_signal", env.Workflow(id).Status, "a signal with another name does not resume")

	env.signal(id, "approval", enginetest.Obj("by", "admin@example.com"))
	wf = env.Workflow(id)
	require.Equal(t, "running", wf.Status, "signal() resumes synchronously")
	require.Equal(t, 2, wf.CurrentStep)
	require.Equal(t, `{"n":1,"by":"admin@example.com"}`, env.PublicJSON(id))
	env.RunOf(id)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":2,"by":"admin@example.com"}`, env.PublicJSON(id), "signal data is available to later steps")
	require.Equal(t, []string{`other {"x":1}`, `approval {"by":"admin@example.com"}`}, env.signalRows(id), "signals are an audit trail")

	// Signals to a missing workflow are stored and are not an error.
	env.signal(987654, "approval", nil)
	require.Equal(t, []string{"approval []"}, env.signalRows(987654))
}

func TestEngineSignalSentBeforeWait(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("early").WaitForSignal("go").WaitForSignal("again", workflow.ResultKey("second")), nil)
	env.signal(id, "go", enginetest.Obj("a", 1))
	require.Equal(t, "running", env.Workflow(id).Status, "the workflow is not waiting yet")
	env.RunOf(id)
	wf := env.Workflow(id)
	require.Equal(t, "waiting_for_signal", wf.Status, "the pre-sent signal satisfied the first wait at once")
	require.Equal(t, 1, wf.CurrentStep)
	env.signal(id, "again", enginetest.Obj("b", 2))
	require.Equal(t, "completed", env.Workflow(id).Status, "a signal wait as the last step completes the workflow")
	require.Equal(t, `{"a":1,"second":{"b":2}}`, env.PublicJSON(id))
}

func TestEngineSignalModes(t *testing.T) {
	t.Parallel()
	t.Run("all requires every signal", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForSignals([]string{"approved", "reviewed"}, workflow.ResultKey("signals")), nil)
		env.RunOf(id)
		env.signal(id, "reviewed", enginetest.Obj("r", 1))
		require.Equal(t, "waiting_for_signal", env.Workflow(id).Status)
		env.signal(id, "approved", enginetest.Obj("a", 1))
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, `{"signals":{"approved":{"a":1},"reviewed":{"r":1}}}`, env.PublicJSON(id))
	})
	t.Run("any resumes on the first", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForSignals([]string{"approve", "reject"}, workflow.WaitAny, workflow.ResultKey("decision")), nil)
		env.RunOf(id)
		env.signal(id, "reject", enginetest.Obj("why", "no"))
		require.Equal(t, `{"decision":{"reject":{"why":"no"}}}`, env.PublicJSON(id))
	})
	t.Run("approval and input are namespaced", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForApproval().WaitForInput(), nil)
		env.RunOf(id)
		env.signal(id, "approval", enginetest.Obj("ok", true))
		env.RunOf(id)
		env.signal(id, "input", enginetest.Obj("text", "hi"))
		require.Equal(t, `{"approval":{"ok":true},"input":{"text":"hi"}}`, env.PublicJSON(id))
	})
	t.Run("decision captures the outcome", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForDecision(), nil)
		env.RunOf(id)
		w, _ := env.State(id).Wait()
		require.Equal(t, workflow.WaitAny, w.Mode)
		require.Equal(t, []string{"approved", "rejected"}, w.WaitingFor)
		env.signal(id, "rejected", enginetest.Obj("note", "later"))
		require.Equal(t, `{"decision":{"outcome":"rejected","signal":"rejected","data":{"note":"later"}}}`, env.PublicJSON(id))
	})
	t.Run("decision without a result key merges", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForDecision(workflow.WithoutResultKey()), nil)
		env.RunOf(id)
		env.signal(id, "approved", enginetest.Obj("by", "x", "_hidden", 1))
		require.Equal(t, `{"decision_outcome":"approved","decision_signal":"approved","by":"x"}`, env.PublicJSON(id))
	})
	t.Run("correlation key and match payload ignore other payloads", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("w").WaitForSignal("paid", workflow.CorrelationKey("order_id"), workflow.MatchPayload(enginetest.Obj("status", "ok", "meta", map[string]any{"v": 1})), workflow.ResultKey("payment")),
			enginetest.Obj("order_id", 42))
		env.RunOf(id)
		require.Contains(t, env.WaitJSON(id), `"match_payload":{"status":"ok","meta":{"v":1}},"correlation_key":"order_id"`)
		env.signal(id, "paid", enginetest.Obj("order_id", 7, "status", "ok", "meta", map[string]any{"v": 1}))
		env.signal(id, "paid", enginetest.Obj("order_id", "42", "status", "ok", "meta", map[string]any{"v": 1}))
		env.signal(id, "paid", enginetest.Obj("order_id", 42, "status", "ok", "meta", map[string]any{"v": 2}))
		require.Equal(t, "waiting_for_signal", env.Workflow(id).Status, "1 != \"1\"; nested subsets must match")
		env.signal(id, "paid", enginetest.Obj("order_id", 42, "status", "ok", "meta", map[string]any{"v": 1, "w": 2}, "amount", 10))
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, `{"order_id":42,"payment":{"order_id":42,"status":"ok","meta":{"v":1,"w":2},"amount":10}}`, env.PublicJSON(id))
	})
}

// What PHP lacks: a signal row another process inserted with plain SQL
// (no evaluation) is picked up by the poller.
func TestEnginePollSignals(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("w").WaitForSignal("approval"), nil)
	env.RunOf(id)
	mark, settled, err := env.Engine.PollSignals(env.Ctx(), 0)
	require.NoError(t, err)
	require.Zero(t, settled)
	require.Zero(t, mark)

	_, err = env.DB.Exec("INSERT INTO `"+env.Store.Tables()["signals"]+"` (workflow_id, signal_name, payload) VALUES (?, 'approval', '{\"by\":\"php\"}')", id)
	require.NoError(t, err)
	mark, settled, err = env.Engine.PollSignals(env.Ctx(), mark)
	require.NoError(t, err)
	require.Equal(t, 1, settled)
	require.Positive(t, mark)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"by":"php"}`, env.PublicJSON(id))

	again, settled, err := env.Engine.PollSignals(env.Ctx(), mark)
	require.NoError(t, err)
	require.Equal(t, mark, again)
	require.Zero(t, settled)
}
