package steps

import (
	"context"
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// waitForWorkflows is a wait_for_workflows step (builder: AwaitWorkflows
// and friends; spec §4): its placeholder parks the workflow on
// workflow_dependencies rows until the awaited workflows end, or settles
// at once. A dependency's end (the post-commit wake-up, the sweeper)
// re-evaluates it under the waiter's lock (Wake, WakeDependency).
type waitForWorkflows struct{}

const msgWaitImpossible = "Workflow wait could not be satisfied."

func (waitForWorkflows) Type() workflow.StepType { return workflow.StepWaitForWorkflows }

func (waitForWorkflows) Placeholder() string { return workflow.HandlerWaitForWorkflows }

// Admit runs every claimed job.
func (waitForWorkflows) Admit(context.Context, *engine.AdmitParams) engine.Admission {
	return engine.Admission{}
}

func (waitForWorkflows) WaitType() string { return "workflow" }

// RunPlaceholder runs __queuety_wait_for_workflows as the worker does
// (runWaitPlaceholder), evaluating handle_wait_for_workflows_step.
func (waitForWorkflows) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	a, err := runWaitPlaceholder(ctx, r, workflow.StepWaitForWorkflows, workflow.StatusWaitingForWorkflows,
		func(ctx context.Context, a *engine.Advance, index int, step workflow.Step) error {
			return evaluateDependencies(ctx, a, index, step, true)
		})
	if err != nil {
		return err
	}
	if a.Parked() {
		// A dependency that became terminal while this transaction was
		// open found no dependency rows to wake (PHP's race, spec §4.8):
		// evaluate once more now that they are committed.
		return r.Engine().ReevaluateWait(ctx, r.Job().WorkflowID.Int64, r.Index())
	}
	return nil
}

// Wake re-evaluates the parked step when a workflow it may wait on ended
// (or the sweeper asks); a pending wait stays as it is. No signal wakes
// it.
func (waitForWorkflows) Wake(ctx context.Context, a *engine.Advance, w *engine.Wake) (bool, error) {
	if w.Cause != engine.WakeDependency {
		return false, nil
	}
	return true, evaluateDependencies(ctx, a, w.Index, w.Step, false)
}

// WaitDetails is the status API's wait_for_workflows_details.
func (waitForWorkflows) WaitDetails(ctx context.Context, p *engine.WaitDetailsParams) (*phpjson.Object, error) {
	return workflowWaitDetails(ctx, p.Engine, p.Step, p.State)
}

// workflowsDef is the step's typed definition.
func workflowsDef(step workflow.Step) *workflow.WaitForWorkflowsStep {
	d, _ := step.Definition()
	return d.(*workflow.WaitForWorkflowsStep)
}

// evaluateDependencies is evaluate_wait_for_workflows_state and what
// follows it on the locked waiter: satisfied ⇒ settle; pending ⇒ park
// (only when park is set: the placeholder parks, a reconcile leaves a
// pending wait as it is); impossible ⇒ fail.
func evaluateDependencies(ctx context.Context, a *engine.Advance, index int, step workflow.Step, park bool) error {
	def := workflowsDef(step)
	ids := def.ResolveIDs(a.State())
	rows, err := a.Tx().WorkflowStatuses(ids)
	if err != nil {
		return err
	}
	switch evaluateWorkflowWait(def, ids, rows) {
	case waitSatisfied:
		if err := a.Tx().ClearDependencies(a.Workflow().ID, index); err != nil {
			return err
		}
		// Only now read the states (a wait on many workflows is
		// re-evaluated once per dependency that finishes).
		var completed []int64
		for _, id := range ids {
			if rows[id].Status == string(workflow.StatusCompleted) {
				completed = append(completed, id)
			}
		}
		if rows, err = a.Tx().WorkflowsByID(completed); err != nil {
			return err
		}
		return a.SettleWait(ctx, index, workflowWaitOutput(def, ids, rows))
	case waitImpossible:
		if err := a.Tx().ClearDependencies(a.Workflow().ID, index); err != nil {
			return err
		}
		a.State().Delete(workflow.KeyWait)
		a.State().Delete(workflow.KeyWaitingForSignal)
		return a.FailLocked(0, msgWaitImpossible)
	}
	if !park {
		return nil
	}
	if err := a.Tx().StoreDependencies(a.Workflow().ID, index, ids); err != nil {
		return err
	}
	waitingFor := make([]phpjson.Value, len(ids))
	for i, id := range ids {
		waitingFor[i] = phpjson.String(strconv.FormatInt(id, 10))
	}
	groupKey, quorum := phpjson.Null(), phpjson.Null()
	if def.WorkflowGroupKey != "" {
		groupKey = phpjson.String(def.WorkflowGroupKey)
	}
	if def.Quorum > 0 {
		quorum = phpjson.Int(def.Quorum)
	}
	details := phpjson.NewObject().
		Set("step_name", field(step, "name")).
		Set("group_key", groupKey).
		Set("quorum", quorum)
	output := phpjson.NewObject().
		Set("wait_mode", phpjson.String(string(def.Mode))).
		Set("step_name", field(step, "name")).
		Set("group_key", groupKey).
		Set("quorum", quorum).
		Set("result_key", phpjson.NullIfEmpty(def.ResultKey))
	return a.Park(ctx, &engine.ParkParams{Index: index, Step: step, WaitType: "workflow", Status: store.StatusWaitingForWorkflows,
		Handler: workflow.HandlerWaitForWorkflows, WaitingFor: waitingFor, Mode: def.Mode, ResultKey: def.ResultKey, Details: details, Output: output})
}

type waitEvaluation int

const (
	waitPending waitEvaluation = iota
	waitSatisfied
	waitImpossible
)

// evaluateWorkflowWait is evaluate_wait_for_workflows_state: only
// `completed` counts as success; `failed` and `cancelled` are terminal
// failures; everything else (paused, waiting) is still active.
func evaluateWorkflowWait(def *workflow.WaitForWorkflowsStep, ids []int64, rows map[int64]store.DependencyRow) waitEvaluation {
	if len(ids) == 0 {
		if def.Mode == workflow.WaitAll {
			return waitSatisfied
		}
		return waitImpossible
	}
	quorum := max(def.Quorum, 1)
	var completed, failed, active int64
	for _, id := range ids {
		r, ok := rows[id]
		if !ok {
			return waitImpossible
		}
		switch r.Status {
		case string(workflow.StatusCompleted):
			completed++
		case string(workflow.StatusFailed), string(workflow.StatusCancelled):
			failed++
		default:
			active++
		}
	}
	switch def.Mode {
	case workflow.WaitAny:
		if completed >= 1 {
			return waitSatisfied
		}
		if active == 0 {
			return waitImpossible
		}
		return waitPending
	case workflow.WaitQuorum:
		if completed >= quorum {
			return waitSatisfied
		}
		if completed+active < quorum {
			return waitImpossible
		}
		return waitPending
	}
	if completed == int64(len(ids)) {
		return waitSatisfied
	}
	if failed > 0 {
		return waitImpossible
	}
	return waitPending
}

// workflowWaitOutput is wait_for_workflows_step_output: the public state of
// each completed dependency, in list order (Any: the first only), under
// result_key (unwrapped for a single dependency) or merged into the top
// level.
func workflowWaitOutput(def *workflow.WaitForWorkflowsStep, ids []int64, rows map[int64]store.DependencyRow) *phpjson.Object {
	results := phpjson.NewObject()
	for _, id := range ids {
		r, ok := rows[id]
		if !ok || r.Status != string(workflow.StatusCompleted) {
			continue
		}
		public := phpjson.NewObject()
		if s, err := workflow.ParseState([]byte(r.State)); err == nil {
			public = s.Public()
		}
		results.Set(strconv.FormatInt(id, 10), phpjson.ObjectValue(public))
		if def.Mode == workflow.WaitAny {
			break
		}
	}
	out := phpjson.NewObject()
	if def.ResultKey != "" {
		if len(ids) == 1 && results.Len() == 1 {
			v, _ := results.Get(strconv.FormatInt(ids[0], 10))
			return out.Set(def.ResultKey, v)
		}
		return out.Set(def.ResultKey, phpjson.ObjectValue(results))
	}
	for _, id := range ids {
		v, ok := results.Get(strconv.FormatInt(id, 10))
		if !ok {
			continue
		}
		o := phpjson.AsArray(v)
		for k, val := range o.All() {
			if !workflow.IsReserved(k) {
				out.Set(k, val)
			}
		}
		if def.Mode == workflow.WaitAny && o.Len() > 0 {
			break
		}
	}
	return out
}

// workflowWaitDetails is wait_for_workflows_details: the dependencies
// sorted into matched (completed), failed (failed or cancelled) and
// remaining, as id strings.
func workflowWaitDetails(ctx context.Context, e *engine.Engine, step workflow.Step, state *workflow.State) (*phpjson.Object, error) {
	def := workflowsDef(step)
	ids := def.ResolveIDs(state)
	statuses, err := e.Store().WorkflowStatuses(ctx, ids)
	if err != nil {
		return nil, err
	}
	matched, remaining, failed := []string{}, []string{}, []string{}
	for _, id := range ids {
		s := fmt.Sprint(id)
		switch workflow.Status(statuses[id]) {
		case workflow.StatusCompleted:
			matched = append(matched, s)
		case workflow.StatusFailed, workflow.StatusCancelled:
			failed = append(failed, s)
		default:
			remaining = append(remaining, s)
		}
	}
	out := phpjson.NewObject()
	phpjson.SetUnlessNull(out, "step_name", field(step, "name"))
	phpjson.SetUnlessNull(out, "group_key", phpjson.NullIfEmpty(def.WorkflowGroupKey))
	phpjson.SetUnlessNull(out, "result_key", phpjson.NullIfEmpty(phpjson.Trim(phpjson.OptionalString(field(step, "result_key")))))
	if def.Quorum > 0 {
		out.Set("quorum", phpjson.Int(def.Quorum))
	}
	out.Set("matched", phpjson.Strings(matched))
	out.Set("remaining", phpjson.Strings(remaining))
	out.Set("failed", phpjson.Strings(failed))
	return out, nil
}
