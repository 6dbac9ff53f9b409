package queuety

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/machine"
)

// The second set of plugin fixtures: batches, chains and state machines.
// Each snapshot lists every table and the in-process calls the plugin
// made into the scenario's classes. The classes are registered here as Go
// callbacks, actions and guards under their PHP names; the same rows and
// calls must come out of our worker. (The PHP classes themselves are run
// through the pool in the php-bridge end-to-end tests.)

type fixture2 struct {
	Scenario     string           `json:"scenario"`
	WorkerQueues []string         `json:"worker_queues"`
	Snapshots    []map[string]any `json:"snapshots"`
	Calls        []map[string]any `json:"calls"`
}

func loadFixture2(t *testing.T, name string) fixture2 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var f fixture2
	require.NoError(t, json.Unmarshal(b, &f))
	return f
}

func rowsOf(snap map[string]any, table string) []map[string]any {
	raw, _ := snap[table].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	return out
}

// insertTable writes recorded rows of a table exactly as the plugin left
// them (every recorded column).
func insertTable(t *testing.T, c *Client, table string, rows []map[string]any) {
	t.Helper()
	for _, r := range rows {
		var cols []string
		var args []any
		for k, v := range r {
			cols = append(cols, "`"+k+"`")
			args = append(args, v)
		}
		q := fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", c.store.Tables()[table], strings.Join(cols, ","),
			strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
		_, err := c.store.DB().Exec(q, args...)
		require.NoError(t, err)
	}
}

// compareTable checks every recorded row of table, by id: times by
// presence, durations by presence, the error column's message and class
// (its PHP trace is the recording's own).
func compareTable(t *testing.T, c *Client, step, table string, want []map[string]any) {
	t.Helper()
	var n int
	require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()[table]+"`"))
	require.Equal(t, len(want), n, "%s: %s rows", step, table)
	for _, w := range want {
		rows, err := c.store.DB().Queryx("SELECT * FROM `"+c.store.Tables()[table]+"` WHERE id = ?", w["id"])
		require.NoError(t, err)
		require.True(t, rows.Next(), "%s: %s %v missing", step, table, w["id"])
		got := map[string]any{}
		require.NoError(t, rows.MapScan(got))
		rows.Close()
		for col, wv := range w {
			gv := got[col]
			switch {
			case strings.HasSuffix(col, "_at") || col == "duration_ms":
				require.Equal(t, wv == nil, gv == nil, "%s: %s %v %s presence", step, table, w["id"], col)
			case col == "error" && table == "state_machine_events" && wv != nil:
				var we, ge map[string]any
				require.NoError(t, json.Unmarshal([]byte(wv.(string)), &we))
				require.NoError(t, json.Unmarshal(gv.([]byte), &ge), "%s: event %v error", step, w["id"])
				delete(we, "trace")
				delete(ge, "trace")
				require.Equal(t, we, ge, "%s: event %v (%v) error", step, w["id"], w["event"])
			default:
				require.Equal(t, norm(wv), norm(gv), "%s: %s %v (%v) column %s", step, table, w["id"], w["event"], col)
			}
		}
	}
}

// callLog records the scenario classes' calls as the fixtures list them.
type callLog struct {
	mu    sync.Mutex
	calls []map[string]any
}

func (l *callLog) add(m map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, m)
}

func (l *callLog) take() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// batchReport is what the fixtures' Batch*Callback classes report.
func batchReport(call string, b *Batch) map[string]any {
	ids := make([]any, len(b.FailedJobIDs))
	for i, id := range b.FailedJobIDs {
		ids[i] = float64(id)
	}
	var name any
	if b.Name != "" {
		name = b.Name
	}
	return map[string]any{"call": call, "batch": map[string]any{
		"id": float64(b.ID), "name": name, "total_jobs": float64(b.TotalJobs), "pending_jobs": float64(b.PendingJobs),
		"failed_jobs": float64(b.FailedJobs), "failed_job_ids": ids, "options": b.Options,
		"progress": float64(b.Progress()), "finished": b.FinishedAt != nil, "cancelled": b.CancelledAt != nil,
		"has_failures": b.FailedJobs > 0,
	}}
}

// scenarioRegistry has Go versions of the fixtures' PHP classes.
func scenarioRegistry(calls *callLog) *Registry {
	reg := fixtureRegistry()
	for _, name := range []string{"BatchThenCallback", "BatchCatchCallback", "BatchFinallyCallback"} {
		reg.RegisterBatchCallback(name, func(_ context.Context, b *Batch) error {
			calls.add(batchReport(name+"::handle", b))
			return nil
		})
	}
	reg.Register("record", Typed(func(_ context.Context, _ *Job, p map[string]any) error {
		calls.add(map[string]any{"call": "RecordHandler::handle", "payload": p})
		return nil
	}))
	reg.Register("FetchDataJob", Typed(func(_ context.Context, _ *Job, p struct {
		URL string `json:"url"`
	}) error {
		calls.add(map[string]any{"call": "FetchDataJob::handle", "url": p.URL})
		return nil
	}))
	// ProcessDataJob's $tries = 1; its failed() hook is the pool's (a
	// Contracts\Job), recorded here so the order of calls is checked.
	reg.Register("ProcessDataJob", Typed(func(_ context.Context, _ *Job, p struct {
		Mode string `json:"mode"`
	}) error {
		msg := "cannot process (" + p.Mode + ")"
		calls.add(map[string]any{"call": "ProcessDataJob::failed", "message": msg})
		return runtimeErr{msg}
	}), WithMaxAttempts(1))
	reg.HandleFunc("NotifyCompleteJob", func(context.Context, *Job) error { return nil })
	reg.RegisterChainCatch("ChainFailedHandler", func(_ context.Context, j *Job, err error) error {
		calls.add(map[string]any{"call": "ChainFailedHandler::handle", "job_id": float64(j.ID), "handler": j.Handler,
			"attempts": float64(j.Attempt), "message": err.Error()})
		return nil
	})
	reg.RegisterStateAction("DraftAction", func(_ context.Context, c machine.Call) (json.RawMessage, error) {
		var s struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal(c.State, &s); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"draft": "v1 of " + s.Title})
	})
	reg.RegisterStateAction("BrokenAction", func(context.Context, machine.Call) (json.RawMessage, error) {
		return nil, runtimeErr{"action failed on purpose"}
	})
	reg.RegisterStateGuard("PublishGuard", func(_ context.Context, c machine.Call) (bool, error) {
		var p struct {
			Approved bool `json:"approved"`
		}
		_ = json.Unmarshal(c.EventPayload, &p)
		return p.Approved, nil
	})
	return reg
}

var fixture2Tables = []string{"jobs", "batches", "state_machines", "state_machine_events"}

var fixture2Files = []string{"batch_then_catch_finally.json", "batch_allow_failures.json", "batch_cancel.json",
	"chain_success.json", "chain_with_catch.json", "state_machine.json", "state_machine_action_fails.json"}

// TestFixtureBatchesChainsMachinesReplay runs each scenario from its
// dispatch to its end, comparing every snapshot on the way.
func TestFixtureBatchesChainsMachinesReplay(t *testing.T) {
	t.Parallel()
	for _, name := range fixture2Files {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			f := loadFixture2(t, name)
			r := newReplay(t, f, 0)
			for i := 1; i < len(f.Snapshots); i++ {
				r.step(t, i)
			}
			require.Equal(t, 0, stepOnce(t, r.w), "nothing left to claim")
		})
	}
}

// TestFixtureBatchesChainsMachinesFromEachSnapshot loads each snapshot
// as the plugin left it (its log rows too) and takes only the next step.
func TestFixtureBatchesChainsMachinesFromEachSnapshot(t *testing.T) {
	t.Parallel()
	for _, name := range fixture2Files {
		f := loadFixture2(t, name)
		for i := 2; i < len(f.Snapshots); i++ {
			t.Run(fmt.Sprintf("%s/%d", strings.TrimSuffix(name, ".json"), i), func(t *testing.T) {
				t.Parallel()
				newReplay(t, f, i-1).step(t, i)
			})
		}
	}
}

type replay struct {
	f     fixture2
	c     *Client
	reg   *Registry
	w     *Worker
	calls *callLog
}

// newReplay loads snapshot from into a fresh database.
func newReplay(t *testing.T, f fixture2, from int) *replay {
	t.Helper()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1; cfg.Queues = f.WorkerQueues })
	tables := fixture2Tables
	if from > 0 {
		tables = append([]string{"logs"}, tables...)
	}
	for _, table := range tables {
		insertTable(t, c, table, rowsOf(f.Snapshots[from], table))
	}
	calls := &callLog{}
	reg := scenarioRegistry(calls)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	return &replay{f: f, c: c, reg: reg, w: w, calls: calls}
}

// step takes the step that led to snapshot i and compares the rows and
// the calls with it.
func (r *replay) step(t *testing.T, i int) {
	t.Helper()
	c, ctx, snap := r.c, context.Background(), r.f.Snapshots[i]
	step := snap["after"].(string)
	switch {
	case strings.Contains(step, "worker ran job"):
		if strings.Contains(step, "available_at forced to NOW()") {
			_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
			require.NoError(t, err)
		}
		require.Equal(t, 1, stepOnce(t, r.w), step)
	case strings.Contains(step, "batch_manager()->cancel"):
		require.NoError(t, c.CancelBatch(ctx, r.reg, 1))
	case strings.HasPrefix(step, "Queuety::machine_event("):
		ev, payload := machineEventStep(t, step)
		err := c.MachineEvent(ctx, r.reg, 1, ev, payload)
		if _, msg, threw := strings.Cut(step, " threw RuntimeException: "); threw {
			require.ErrorIs(t, err, machine.ErrEventRejected, step)
			require.ErrorContains(t, err, msg)
		} else {
			require.NoError(t, err, step)
		}
	default:
		t.Fatalf("unknown step %q", step)
	}
	compareJobs(t, c, step, rowsOf(snap, "jobs"))
	compareLogs(t, c, step, rowsOf(snap, "logs"))
	for _, table := range fixture2Tables[1:] {
		compareTable(t, c, step, table, rowsOf(snap, table))
	}
	var want []map[string]any
	for _, call := range r.f.Calls {
		if int(call["snapshot"].(float64)) == i {
			call = cloneMap(call)
			delete(call, "snapshot")
			delete(call, "after")
			want = append(want, call)
		}
	}
	got := r.calls.take()
	roundTrip(t, &got)
	require.Equal(t, want, got, "%s: calls", step)
}

// machineEventStep reads the event and payload of a machine_event step.
func machineEventStep(t *testing.T, step string) (string, []byte) {
	t.Helper()
	args := strings.TrimPrefix(step, "Queuety::machine_event(id, ")
	ev, rest, ok := strings.Cut(args, ", ")
	require.True(t, ok, step)
	end := strings.LastIndex(rest, ")")
	require.Positive(t, end, step)
	return ev, []byte(rest[:end])
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// roundTrip makes Go values compare with decoded JSON.
func roundTrip(t *testing.T, v *[]map[string]any) {
	t.Helper()
	if len(*v) == 0 {
		*v = nil
		return
	}
	b, err := json.Marshal(*v)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}
