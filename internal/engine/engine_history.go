package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The history operations of Queuety's facade and WP-CLI: workflow_state_at
// (WorkflowEventLog::get_state_at_step), rewind_workflow
// (Workflow::rewind), fork_workflow (Workflow::fork) and replay_workflow
// (WorkflowReplayer::replay, reading what Export writes).

// StateAt is the public state recorded after step index completed (or its
// wait resumed): the state_after of the step's last step_completed or
// workflow_resumed event. nil when there is none, as PHP's null.
func (e *Engine) StateAt(ctx context.Context, workflowID int64, step int) (*phpjson.Object, error) {
	raw, ok, err := e.store.StateAtStep(ctx, workflowID, step)
	if err != nil || !ok {
		return nil, err
	}
	v, err := phpjson.DecodeString(raw)
	if err != nil || !phpjson.IsArray(v) {
		return nil, nil // PHP: json_decode gave no array
	}
	out := phpjson.NewObject()
	if o, isObject := v.AsObject(); isObject {
		for k, val := range o.All() {
			if !phpjson.IsIntKey(k) { // PHP keeps the string keys only
				out.Set(k, val)
			}
		}
	}
	return out, nil
}

// Rewind is Workflow::rewind: the workflow takes the public state recorded
// after step toStep (StateAt) with its runtime keys (_steps, _queue,
// _priority, _max_attempts and every other _ key) from the live row,
// becomes running at step toStep+1 with its failure cleared, its pending
// and processing jobs are buried ("Superseded by workflow rewind") so an
// old worker cannot continue the abandoned path, the step is enqueued and
// workflow_rewound is logged. Unlike PHP, rewinding to the last step is
// refused: PHP leaves such a workflow running with no step to run.
func (e *Engine) Rewind(ctx context.Context, workflowID int64, toStep int) error {
	snapshot, err := e.StateAt(ctx, workflowID, toStep)
	if err != nil {
		return err
	}
	if snapshot == nil {
		if _, err := e.store.GetWorkflow(ctx, workflowID); err != nil {
			return err
		}
		return lifecycleErrorf("No recorded state found for workflow %d at step %d.", workflowID, toStep)
	}
	return e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		wf, err := tx.LockWorkflow(workflowID)
		if err != nil {
			return err
		}
		if wf == nil {
			return notFound(workflowID)
		}
		full, err := workflow.ParseState([]byte(wf.State))
		if err != nil {
			return fmt.Errorf("workflow %d: %w", workflowID, err)
		}
		steps := full.Steps()
		next := toStep + 1
		if next >= len(steps) {
			return lifecycleErrorf("Workflow %d has no step after step %d to run again.", workflowID, toStep)
		}
		// Event snapshots hold only the public state: the runtime keys come
		// from the live row, as in PHP.
		obj := phpjson.CloneObject(snapshot)
		obj.Set(workflow.KeySteps, phpjson.Get(full.Object(), workflow.KeySteps))
		obj.Set(workflow.KeyQueue, phpjson.String(full.Queue()))
		obj.Set(workflow.KeyPriority, phpjson.Int(int64(full.Priority())))
		obj.Set(workflow.KeyMaxAttempts, phpjson.Int(full.MaxAttempts()))
		for k, v := range full.Object().All() {
			if _, has := obj.Get(k); strings.HasPrefix(k, "_") && !has {
				obj.Set(k, v)
			}
		}
		state := workflow.NewState(obj)
		b, err := state.Encode()
		if err != nil {
			return err
		}
		if err := tx.RewindWorkflow(workflowID, b, next); err != nil {
			return err
		}
		row := *wf
		row.Status, row.State, row.CurrentStep = string(workflow.StatusRunning), string(b), next
		a := &Advance{e: e, tx: tx, php: php, trace: &jobTrace{consumed: true}, wf: &row, state: state, steps: steps, current: next}
		if err := a.enqueue(ctx, steps[next], next); err != nil {
			return err
		}
		l := store.WorkflowLog(workflowID, wf.Name, state.Queue(), store.LogWorkflowRewound)
		if err := setLogContext(&l, phpjson.NewObject().Set("rewound_to_step", phpjson.Int(int64(toStep)))); err != nil {
			return err
		}
		return tx.InsertLogs(l)
	})
}

// Fork is Workflow::fork: a running copy of the workflow named
// "<name>_fork_<unix time>" with the same state, step and step count; its
// current step is enqueued and workflow_forked is logged on both (with
// forked_workflow_id and forked_from_workflow_id). It returns the copy's id.
func (e *Engine) Fork(ctx context.Context, workflowID int64, now time.Time) (int64, error) {
	var forkedID int64
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		wf, err := tx.LockWorkflow(workflowID)
		if err != nil {
			return err
		}
		if wf == nil {
			return notFound(workflowID)
		}
		state, err := workflow.ParseState([]byte(wf.State))
		if err != nil {
			return fmt.Errorf("workflow %d: %w", workflowID, err)
		}
		b, err := state.Encode()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s_fork_%d", wf.Name, now.Unix())
		if forkedID, err = tx.InsertFork(name, b, wf.CurrentStep, wf.TotalSteps); err != nil {
			return err
		}
		steps := state.Steps()
		if wf.CurrentStep >= 0 && wf.CurrentStep < len(steps) {
			row := *wf
			row.ID, row.Name, row.Status, row.State = forkedID, name, string(workflow.StatusRunning), string(b)
			row.ParentWorkflowID, row.ParentStepIndex = sql.NullInt64{}, sql.NullInt64{}
			a := &Advance{e: e, tx: tx, php: php, trace: &jobTrace{consumed: true}, wf: &row, state: state, steps: steps, current: wf.CurrentStep}
			if err := a.enqueue(ctx, steps[wf.CurrentStep], wf.CurrentStep); err != nil {
				return err
			}
		}
		from := store.WorkflowLog(workflowID, wf.Name, state.Queue(), store.LogWorkflowForked)
		if err := setLogContext(&from, phpjson.NewObject().Set("forked_workflow_id", phpjson.Int(forkedID))); err != nil {
			return err
		}
		to := store.WorkflowLog(forkedID, name, state.Queue(), store.LogWorkflowForked)
		if err := setLogContext(&to, phpjson.NewObject().Set("forked_from_workflow_id", phpjson.Int(workflowID))); err != nil {
			return err
		}
		return tx.InsertLogs(from, to)
	})
	return forkedID, err
}

func setLogContext(l *store.LogRow, ctx *phpjson.Object) error {
	b, err := encodeObject(ctx)
	if err != nil {
		return err
	}
	l.Context = store.String(string(b))
	return nil
}

// replayStatuses are the statuses a replay keeps; any other becomes running.
var replayStatuses = []string{"running", "completed", "failed", "paused", "waiting_for_signal", "waiting_for_workflows", "cancelled"}

// Replay is WorkflowReplayer::replay: a new workflow "<name>_replay_<unix
// time>" from an export document (Export, or the plugin's export_workflow):
// its state, status (completed: at its last step; failed: with its error),
// events, logs, signals, wait dependencies, artifacts and chunks are
// copied without running anything, a workflow_replayed event names the
// source, and a running copy's current step is enqueued. It returns the
// new workflow's id.
func (e *Engine) Replay(ctx context.Context, doc *phpjson.Object, now time.Time) (int64, error) {
	wfv, _ := doc.Get("workflow")
	wfData, ok := wfv.AsObject()
	if !ok {
		return 0, &workflow.ReplayError{Message: "Invalid export data: missing workflow key."}
	}
	state := phpjson.NewObject()
	if o, ok := phpjson.Get(wfData, "state").AsObject(); ok {
		for k, v := range o.All() {
			if !phpjson.IsIntKey(k) {
				state.Set(k, v)
			}
		}
	}
	st := workflow.NewState(state)
	numeric := func(v phpjson.Value) int {
		if s, isString := v.AsString(); isString && strings.Trim(s, "0123456789") != "" {
			return 0
		}
		return int(phpjson.ToInt(v))
	}
	currentStep := numeric(phpjson.Get(wfData, "current_step"))
	totalSteps := numeric(phpjson.Get(wfData, "total_steps"))
	source := "running"
	if v := phpjson.Get(wfData, "status"); phpjson.IsScalar(v) {
		source = phpjson.ToString(v)
	}
	status := "running"
	for _, s := range replayStatuses {
		if s == source {
			status = s
		}
	}
	step := currentStep
	if status == "completed" {
		step = totalSteps
	}
	nowStr := store.DateTime(now.UTC())
	row := store.ReplayedWorkflow{Name: phpjson.ToString(phpjson.Get(wfData, "name")) + fmt.Sprintf("_replay_%d", now.Unix()),
		Status: status, Step: step, Total: totalSteps}
	switch status {
	case "completed":
		row.CompletedAt = store.String(nowStr)
	case "failed":
		row.FailedAt = store.String(nowStr)
		if msg, isString := phpjson.Get(wfData, "error_message").AsString(); isString {
			row.ErrorMessage = store.String(msg)
		}
	}
	var err error
	if row.State, err = encodeObject(state); err != nil {
		return 0, err
	}
	history, err := replayedHistory(doc)
	if err != nil {
		return 0, err
	}
	replayCtx := phpjson.NewObject().
		Set("source_workflow_id", phpjson.Int(int64(numeric(phpjson.Get(wfData, "id"))))).
		Set("source_status", phpjson.String(source)).
		Set("definition_version", phpjson.Get(wfData, "definition_version")).
		Set("definition_hash", phpjson.Get(wfData, "definition_hash"))
	ctxBytes, err := encodeObject(replayCtx)
	if err != nil {
		return 0, err
	}
	public, err := encodeObject(st.Public())
	if err != nil {
		return 0, err
	}
	var newID int64
	err = e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		if newID, err = tx.InsertReplayedWorkflow(row); err != nil {
			return err
		}
		if err := tx.InsertReplayedHistory(newID, history); err != nil {
			return err
		}
		if err := tx.InsertReplayMarker(newID, step, ctxBytes, public, ctxBytes); err != nil {
			return err
		}
		steps := st.Steps()
		if status != "running" || step < 0 || step >= len(steps) {
			return nil
		}
		wf := &store.WorkflowRow{ID: newID, Name: row.Name, Status: status, State: string(row.State), CurrentStep: step, TotalSteps: totalSteps}
		a := &Advance{e: e, tx: tx, php: php, trace: &jobTrace{consumed: true}, wf: wf, state: st, steps: steps, current: step}
		return a.enqueue(ctx, steps[step], step)
	})
	return newID, err
}

// replayedHistory reads the rows of an export document a replay copies,
// with the plugin's defaults for missing fields.
func replayedHistory(doc *phpjson.Object) (store.ReplayedHistory, error) {
	var h store.ReplayedHistory
	each := func(key string, fn func(o *phpjson.Object) error) error {
		list, _ := phpjson.Get(doc, key).AsList()
		for _, v := range list {
			if o, ok := v.AsObject(); ok {
				if err := fn(o); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := each("events", func(o *phpjson.Object) error {
		ev := store.ReplayedEvent{StepIndex: int(phpjson.ToInt(phpjson.Get(o, "step_index"))),
			StepName: rpString(o, "step_name"), StepType: rpString(o, "step_type"),
			Handler: phpjson.ToString(phpjson.Get(o, "handler")), Event: "step_completed", Queue: rpString(o, "queue"),
			Attempt: rpInt(o, "attempt"), DurationMS: rpInt(o, "duration_ms"), CreatedAt: rpString(o, "created_at")}
		if v := phpjson.Get(o, "event"); !v.IsNull() {
			ev.Event = phpjson.ToString(v)
		}
		for _, f := range []struct {
			key string
			dst *[]byte
		}{{"input", &ev.Input}, {"output", &ev.Output}, {"state_before", &ev.StateBefore}, {"state_after", &ev.StateAfter},
			{"context", &ev.Ctx}, {"artifacts", &ev.Artifacts}, {"chunks", &ev.Chunks}, {"error", &ev.Error}} {
			b, err := rpJSON(o, f.key)
			if err != nil {
				return err
			}
			*f.dst = b
		}
		h.Events = append(h.Events, ev)
		return nil
	})
	if err != nil {
		return h, err
	}
	err = each("logs", func(o *phpjson.Object) error {
		l := store.ReplayedLog{StepIndex: rpInt(o, "step_index"), Handler: phpjson.ToString(phpjson.Get(o, "handler")),
			Queue: "default", Event: "debug", Attempt: rpInt(o, "attempt"), DurationMS: rpInt(o, "duration_ms"),
			ErrorMessage: rpString(o, "error_message"), CreatedAt: rpString(o, "created_at")}
		if v := phpjson.Get(o, "queue"); !v.IsNull() {
			l.Queue = phpjson.ToString(v)
		}
		if v := phpjson.Get(o, "event"); !v.IsNull() {
			l.Event = phpjson.ToString(v)
		}
		var err error
		l.Context, err = rpJSON(o, "context")
		h.Logs = append(h.Logs, l)
		return err
	})
	if err != nil {
		return h, err
	}
	err = each("signals", func(o *phpjson.Object) error {
		payload, err := phpjson.Encode(phpjson.Coalesce(phpjson.Get(o, "payload"), phpjson.List()))
		h.Signals = append(h.Signals, store.ReplayedSignal{Name: phpjson.ToString(phpjson.Get(o, "signal_name")),
			Payload: payload, ReceivedAt: rpString(o, "received_at")})
		return err
	})
	if err != nil {
		return h, err
	}
	err = each("wait_dependencies", func(o *phpjson.Object) error {
		dep := phpjson.ToInt(phpjson.Get(o, "dependency_workflow_id"))
		if dep < 1 {
			return nil
		}
		h.Dependencies = append(h.Dependencies, store.ReplayedDependency{StepIndex: int(phpjson.ToInt(phpjson.Get(o, "step_index"))),
			DependencyWorkflowID: dep, SatisfiedAt: rpString(o, "satisfied_at"), CreatedAt: rpString(o, "created_at")})
		return nil
	})
	if err != nil {
		return h, err
	}
	err = each("artifacts", func(o *phpjson.Object) error {
		kind := "json"
		if v := phpjson.Get(o, "kind"); !v.IsNull() && phpjson.IsScalar(v) {
			kind = phpjson.ToString(v)
		}
		a := store.ReplayedArtifact{Key: phpjson.ToString(phpjson.Get(o, "key")), Kind: kind, StepIndex: rpInt(o, "step_index"),
			CreatedAt: rpString(o, "created_at"), UpdatedAt: rpString(o, "updated_at")}
		content := phpjson.Get(o, "content")
		if strings.EqualFold(kind, "json") {
			b, err := phpjson.Encode(content)
			if err != nil {
				return err
			}
			a.Content = string(b)
		} else if phpjson.IsScalar(content) {
			a.Content = phpjson.ToString(content)
		}
		var err error
		a.Metadata, err = phpjson.Encode(phpjson.Coalesce(phpjson.Get(o, "metadata"), phpjson.List()))
		h.Artifacts = append(h.Artifacts, a)
		return err
	})
	if err != nil {
		return h, err
	}
	err = each("chunks", func(o *phpjson.Object) error {
		c := store.ReplayedChunk{JobID: phpjson.ToInt(phpjson.Get(o, "job_id")), StepIndex: rpInt(o, "step_index"),
			ChunkIndex: phpjson.ToInt(phpjson.Get(o, "chunk_index")), CreatedAt: rpString(o, "created_at")}
		if v := phpjson.Get(o, "content"); phpjson.IsScalar(v) {
			c.Content = phpjson.ToString(v)
		}
		h.Chunks = append(h.Chunks, c)
		return nil
	})
	return h, err
}

func rpString(o *phpjson.Object, key string) (s sql.NullString) {
	if v := phpjson.Get(o, key); !v.IsNull() {
		return store.String(phpjson.ToString(v))
	}
	return s
}

func rpInt(o *phpjson.Object, key string) (n sql.NullInt64) {
	if v := phpjson.Get(o, key); !v.IsNull() {
		return store.Int(phpjson.ToInt(v))
	}
	return n
}

// rpJSON is json_or_null: NULL stays NULL, anything else is encoded.
func rpJSON(o *phpjson.Object, key string) ([]byte, error) {
	v := phpjson.Get(o, key)
	if v.IsNull() {
		return nil, nil
	}
	return phpjson.Encode(v)
}
