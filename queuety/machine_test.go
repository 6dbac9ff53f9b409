package queuety

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// loadMachineFixture writes the dispatch snapshot of a machine fixture.
func loadMachineFixture(t *testing.T, c *Client, name string) {
	t.Helper()
	f := loadFixture2(t, name)
	for _, table := range fixture2Tables {
		insertTable(t, c, table, rowsOf(f.Snapshots[0], table))
	}
}

func machineEventNames(t *testing.T, c *Client, id int64) []string {
	t.Helper()
	evs, err := c.MachineTimeline(context.Background(), id, 100)
	require.NoError(t, err)
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// recover_stale's fail_action branch: the sweep buries a dead worker's
// action job whose attempts are used up, and the machine is marked failed
// with action_failed and machine_failed rows, as the plugin's sweep does.
func TestStaleActionJobFailsItsMachine(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	loadMachineFixture(t, c, "state_machine_action_fails.json")
	_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET status = 'processing', attempts = 2, reserved_at = NOW() - INTERVAL 2 HOUR")
	require.NoError(t, err)
	r, err := c.RecoverStale(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, r.Buried)
	m, err := c.Machine(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "failed", m.Status)
	require.Equal(t, store.StaleMessage, *m.ErrorMessage)
	require.Equal(t, []string{"machine_started", "action_enqueued", "action_failed", "machine_failed"}, machineEventNames(t, c, 1))
	evs, err := c.MachineTimeline(ctx, 1, 100)
	require.NoError(t, err)
	for _, e := range evs[2:] {
		require.JSONEq(t, `{"message":"Stale: worker died without completing."}`, string(e.Error))
		require.Equal(t, int64(1), *e.JobID)
		require.Equal(t, int64(2), *e.Attempt)
		require.JSONEq(t, `{"ticket":9}`, string(e.StateAfter))
	}
}

// Without a PHP pool or a Go state action, action jobs are not claimed
// (never buried as "Handler not found").
func TestActionJobsLeftToPHPWithoutPoolOrGoAction(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	loadMachineFixture(t, c, "state_machine.json")
	reg := NewRegistry()
	reg.HandleFunc("noop", func(context.Context, *Job) error { return nil })
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 0, stepOnce(t, w))
	require.Equal(t, store.StatusPending, jobRow(t, c, 1).Status)

	all := newTestClient(t, func(cfg *Config) { cfg.ClaimAll = true })
	loadMachineFixture(t, all, "state_machine.json")
	w, err = all.NewWorker(NewRegistry())
	require.NoError(t, err)
	require.Equal(t, 0, stepOnce(t, w), "claim-all leaves them too, never burying them as not found")
	require.Equal(t, store.StatusPending, jobRow(t, all, 1).Status)
}

// With Go state actions but none for this class, and no pool, the action
// job is handed back untouched (attempt restored, no log rows) and the
// machine is unchanged.
func TestActionJobWithoutItsActionHandedBack(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	loadMachineFixture(t, c, "state_machine.json")
	reg := NewRegistry()
	reg.RegisterStateAction("OtherAction", func(context.Context, machine.Call) (json.RawMessage, error) {
		return json.RawMessage(`[]`), nil
	})
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	j := jobRow(t, c, 1)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 0, j.Attempts)
	require.Empty(t, jobLogs(t, c, 1))
	require.Equal(t, []string{"machine_started", "action_enqueued"}, machineEventNames(t, c, 1))
	m, err := c.Machine(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, "running", m.Status)
}

// An action that emits an event transitions at once and enqueues the next
// state's action; the event's payload defaults to the action's updates.
func TestActionEmittingEventTransitions(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	def := `{"name":"flow","initial_state":"a","states":{"a":{"name":"a","action":{"class":"StepA","payload":[]},"action_class":"StepA","terminal_status":null,"transitions":[{"event":"next","target_state":"b","guard":null,"guard_class":null,"name":"next"}]},"b":{"name":"b","action":{"class":"StepB","payload":{"k":1}},"action_class":"StepB","terminal_status":null,"transitions":[{"event":"done","target_state":"c","guard":null,"guard_class":null,"name":"done"}]},"c":{"name":"c","action":null,"action_class":null,"terminal_status":"completed","transitions":[]}},"queue":"default","priority":2,"max_attempts":4,"definition_version":null,"definition_hash":null}`
	_, err := c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["state_machines"]+"` (id, name, status, current_state, state, definition) VALUES (1, 'flow', 'running', 'a', '{\"n\":1}', ?)", def)
	require.NoError(t, err)
	// The action row as StateMachine writes it (Dispatch refuses the name).
	row, err := dispatchRow("placeholder", json.RawMessage(`{"machine_id":1,"state_name":"a","event_name":null,"event_payload":[]}`), nil)
	require.NoError(t, err)
	row.Handler = machineActionHandler
	_, _, err = c.store.InsertJob(ctx, row)
	require.NoError(t, err)
	reg := NewRegistry()
	reg.RegisterStateAction("StepA", func(context.Context, machine.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"n":2,"_event":"next","_hidden":true}`), nil
	})
	var gotB machine.Call
	reg.RegisterStateAction("StepB", func(_ context.Context, call machine.Call) (json.RawMessage, error) {
		gotB = call
		return json.RawMessage(`"done"`), nil
	})
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	next := jobRow(t, c, 2)
	require.Equal(t, machineActionHandler, next.Handler)
	require.Equal(t, `{"machine_id":1,"state_name":"b","event_name":"next","event_payload":{"n":2}}`, next.Payload)
	require.Equal(t, 2, next.Priority)
	require.Equal(t, 4, next.MaxAttempts)
	require.Equal(t, 1, stepOnce(t, w))
	require.Equal(t, "next", gotB.Event)
	require.JSONEq(t, `{"n":2}`, string(gotB.EventPayload))
	require.JSONEq(t, `{"k":1}`, string(gotB.Payload))
	m, err := c.Machine(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "completed", m.Status)
	require.Equal(t, "c", m.CurrentState)
	require.JSONEq(t, `{"n":2}`, string(m.State))
	require.Equal(t, []string{"action_started", "action_completed", "transitioned", "action_enqueued",
		"action_started", "action_completed", "transitioned", "machine_completed"}, machineEventNames(t, c, 1))
}

// A machine defined and dispatched from Go writes the plugin's rows: the
// definition bytes and hash, machine_started, the action job and
// action_enqueued, as the recorded dispatches.
func TestDispatchMachineWritesThePluginsRows(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]*machine.Builder{
		"state_machine.json": machine.New("review").Version("review.v1").State("drafting", "").Action("DraftAction", nil).
			On("submit", "published", "PublishGuard", "").State("published", "completed"),
		"state_machine_action_fails.json": machine.New("flaky_machine").State("working", "").Action("BrokenAction", nil).
			On("done", "finished", "", "").State("finished", "completed").MaxAttempts(2),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := loadFixture2(t, name)
			c := newTestClient(t, nil)
			initial := rowsOf(f.Snapshots[0], "state_machines")[0]["state"].(string)
			id, existing, err := c.DispatchMachine(context.Background(), b, json.RawMessage(initial))
			require.NoError(t, err)
			require.False(t, existing)
			require.Equal(t, int64(1), id)
			compareJobs(t, c, "dispatch", rowsOf(f.Snapshots[0], "jobs"))
			for _, table := range fixture2Tables[1:] {
				compareTable(t, c, "dispatch", table, rowsOf(f.Snapshots[0], table))
			}
		})
	}
}

func TestDispatchMachineIdempotencyAndErrors(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	b := machine.New("m").IdempotencyKey("k1").State("wait", "").On("go", "end", "", "").State("end", "completed")
	id, existing, err := c.DispatchMachine(ctx, b, nil)
	require.NoError(t, err)
	require.False(t, existing)
	again, existing, err := c.DispatchMachine(ctx, b, map[string]int{"x": 1})
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, id, again)
	m, err := c.Machine(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "waiting_event", m.Status)
	require.Equal(t, []string{"machine_started", "machine_waiting"}, machineEventNames(t, c, id))

	_, _, err = c.DispatchMachine(ctx, machine.New("bad").State("a", "").On("x", "missing", "", ""), nil)
	require.EqualError(t, err, "State 'a' references missing transition target 'missing'.")
	_, _, err = c.DispatchMachine(ctx, machine.New("bad").State("a", "completed").Action("A", nil), nil)
	require.EqualError(t, err, "State 'a' cannot be terminal and have an entry action.")
	_, _, err = c.DispatchMachine(ctx, machine.New("bad").Action("A", nil), nil)
	require.EqualError(t, err, "Call state() before configuring actions or transitions.")
}

// A worker stopping while an action runs hands the job back and writes
// no action_failed row: the machine is as before the attempt.
func TestActionInterruptedByShutdownLeavesNoRows(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.ShutdownGrace = 100 * time.Millisecond })
	loadMachineFixture(t, c, "state_machine.json")
	reg := NewRegistry()
	started := make(chan struct{})
	reg.RegisterStateAction("DraftAction", func(ctx context.Context, _ machine.Call) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	<-started
	require.NoError(t, w.Stop(context.Background()))
	j := jobRow(t, c, 1)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 0, j.Attempts, "handed back with its attempt restored")
	require.Equal(t, []string{"machine_started", "action_enqueued"}, machineEventNames(t, c, 1))
}
