package phppool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// The plugin fixtures' batch callbacks, chain catch, state action and
// guard are PHP classes (php-bridge/tests/fixtures/callback-classes.php,
// served by callback-app.php):
// the worker and the client call them through the pool's "call" request.

func callbackPool(t *testing.T) *phppool.Pool {
	t.Helper()
	cmd := workerCommand(t)
	app, err := filepath.Abs("../../../php-bridge/tests/fixtures/callback-app.php")
	require.NoError(t, err)
	cmd[len(cmd)-1] = app
	return startPool(t, phppool.Config{Workers: 1, Command: cmd}, nil)
}

// loadSnapshot writes a plugin fixture's first snapshot (the dispatch)
// into the tables, with edit applied to each row first.
func loadSnapshot(t *testing.T, c *queuety.Client, name string, edit func(table string, row map[string]any)) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../../testdata/queuety-plugin", name))
	require.NoError(t, err)
	var f struct {
		Snapshots []map[string]json.RawMessage `json:"snapshots"`
		Calls     []map[string]any             `json:"calls"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	for _, table := range []string{"jobs", "batches", "state_machines", "state_machine_events"} {
		var rows []map[string]any
		require.NoError(t, json.Unmarshal(f.Snapshots[0][table], &rows))
		for _, row := range rows {
			if edit != nil {
				edit(table, row)
			}
			var cols []string
			var args []any
			for k, v := range row {
				cols = append(cols, "`"+k+"`")
				args = append(args, v)
			}
			_, err := clientstore.Of(c).DB().Exec(fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", clientstore.Of(c).Tables()[table],
				strings.Join(cols, ","), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",")), args...)
			require.NoError(t, err)
		}
	}
	return f.Calls
}

func readCalls(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func TestPHPBatchCallbacksRunInThePool(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"batch_then_catch_finally.json", "batch_allow_failures.json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// One slot, as the plugin's one worker: each callback reads the
			// batch as its job left it.
			c := newClient(t, func(cfg *queuety.Config) { cfg.Concurrency = 1 })
			marker := filepath.Join(t.TempDir(), "calls")
			want := loadSnapshot(t, c, name, func(table string, row map[string]any) {
				if table == "batches" {
					row["name"] = marker
				}
			})
			reg := queuety.NewRegistry()
			startWorkflowWorker(t, c, reg, callbackPool(t))
			require.Eventually(t, func() bool { return len(readCalls(t, marker)) == len(want) }, 20*time.Second, 20*time.Millisecond)
			got := readCalls(t, marker)
			for i, w := range want {
				wb := w["batch"].(map[string]any)
				wb["name"] = marker
				require.Equal(t, w["call"], got[i]["call"])
				require.Equal(t, wb, got[i]["batch"], "call %d", i)
			}
		})
	}
}

func TestPHPChainCatchRunsInThePoolAfterTheBurial(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	marker := filepath.Join(t.TempDir(), "calls")
	ctx := context.Background()
	payload, err := json.Marshal(map[string]any{"why": "chain", "marker": marker, "__chain_catch": "ChainFailedHandler"})
	require.NoError(t, err)
	d, err := c.Dispatch(ctx, "flaky", json.RawMessage(payload), queuety.MaxAttempts(1))
	require.NoError(t, err)
	startWorkflowWorker(t, c, queuety.NewRegistry(), callbackPool(t))
	require.Eventually(t, func() bool { return len(readCalls(t, marker)) == 1 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]any{"call": "ChainFailedHandler::handle", "job_id": float64(d.ID), "handler": "flaky",
		"attempts": float64(1), "message": "boom: chain", "class": "RuntimeException"}, readCalls(t, marker)[0])
	j, err := clientstore.Of(c).GetJob(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, "buried", j.Status)
}

func TestPHPStateActionAndGuardRunInThePool(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	ctx := context.Background()
	loadSnapshot(t, c, "state_machine.json", nil)
	pool := callbackPool(t)
	reg := queuety.NewRegistry()
	startWorkflowWorker(t, c, reg, pool)
	require.Eventually(t, func() bool {
		m, err := c.Machine(ctx, 1)
		require.NoError(t, err)
		return m.Status == "waiting_event"
	}, 20*time.Second, 20*time.Millisecond)
	m, err := c.Machine(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, `{"doc_id":7,"title":"\u00dcn\u00ef\/draft","draft":"v1 of \u00dcn\u00ef\/draft"}`, string(m.State))

	err = c.MachineEvent(ctx, reg, 1, "submit", []byte(`{"approved":false}`))
	require.ErrorIs(t, err, machine.ErrEventRejected)
	require.ErrorContains(t, err, "State 'drafting' does not allow event 'submit'.")
	require.NoError(t, c.MachineEvent(ctx, reg, 1, "submit", []byte(`{"approved":true,"by":"editor@example.com"}`)))
	m, err = c.Machine(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "completed", m.Status)
	evs, err := c.MachineTimeline(ctx, 1, 100)
	require.NoError(t, err)
	var names []string
	for _, e := range evs {
		names = append(names, e.Event)
	}
	require.Equal(t, []string{"machine_started", "action_enqueued", "action_started", "action_completed", "machine_waiting",
		"event_received", "guard_started", "guard_completed", "event_rejected",
		"event_received", "guard_started", "guard_completed", "transitioned", "machine_completed"}, names)
}

func TestPHPStateActionFailuresAndBadClasses(t *testing.T) {
	t.Parallel()
	c := newClient(t, func(cfg *queuety.Config) { cfg.Backoff = queuety.Backoff{List: []int{0}} })
	ctx := context.Background()
	loadSnapshot(t, c, "state_machine_action_fails.json", nil)
	startWorkflowWorker(t, c, queuety.NewRegistry(), callbackPool(t))
	require.Eventually(t, func() bool {
		m, err := c.Machine(ctx, 1)
		require.NoError(t, err)
		return m.Status == "failed"
	}, 20*time.Second, 20*time.Millisecond)
	m, err := c.Machine(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "action failed on purpose", *m.ErrorMessage)
	evs, err := c.MachineTimeline(ctx, 1, 100)
	require.NoError(t, err)
	var names []string
	for _, e := range evs {
		names = append(names, e.Event)
	}
	require.Equal(t, []string{"machine_started", "action_enqueued", "action_started", "action_failed",
		"action_started", "action_failed", "machine_failed"}, names)
	var e struct{ Message, Class, Trace string }
	require.NoError(t, json.Unmarshal(evs[3].Error, &e))
	require.Equal(t, "action failed on purpose", e.Message)
	require.Equal(t, "RuntimeException", e.Class)
	require.Contains(t, e.Trace, "BrokenAction->handle()", "PHP's own trace")

	// A class that is not a StateAction fails the attempt with the
	// plugin's message, and no action_started row.
	_, err = clientstore.Of(c).DB().Exec("UPDATE `" + clientstore.Of(c).Tables()["state_machines"] + "` SET status = 'running', definition = REPLACE(definition, 'BrokenAction', 'NotAnAction') WHERE id = 1")
	require.NoError(t, err)
	// The action row as StateMachine writes it (Dispatch refuses the name).
	row, err := queuety.DispatchRow("placeholder", json.RawMessage(`{"machine_id":1,"state_name":"working","event_name":null,"event_payload":[]}`), queuety.MaxAttempts(1))
	require.NoError(t, err)
	id, _, err := clientstore.Of(c).InsertJob(ctx, store.InsertJob{Queue: row.Queue, Handler: machine.ActionHandler,
		Payload: row.Payload, Priority: row.Priority, MaxAttempts: row.MaxAttempts, CostUnits: row.CostUnits})
	require.NoError(t, err)
	d := queuety.Dispatched{ID: id}
	before := len(evs)
	require.Eventually(t, func() bool { // the burial, then fail_action's row
		evs, err = c.MachineTimeline(ctx, 1, 100)
		require.NoError(t, err)
		return len(evs) == before+2
	}, 20*time.Second, 20*time.Millisecond)
	j, err := clientstore.Of(c).GetJob(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, "buried", j.Status)
	require.Equal(t, "State action class 'NotAnAction' must implement Queuety\\Contracts\\StateAction.", j.ErrorMessage.String)
	require.Equal(t, "action_failed", evs[len(evs)-2].Event)
	require.JSONEq(t, "null", string(evs[len(evs)-2].Input), "failed before the action's input was built")
	ctxCol := ""
	require.NoError(t, clientstore.Of(c).DB().Get(&ctxCol, "SELECT context FROM `"+clientstore.Of(c).Tables()["state_machine_events"]+"` WHERE id = ?", evs[len(evs)-2].ID))
	require.Equal(t, "[]", ctxCol, "nor its context")
	require.Equal(t, "machine_failed", evs[len(evs)-1].Event)
}
