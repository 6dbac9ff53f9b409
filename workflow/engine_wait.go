package workflow

import (
	"context"
	"strconv"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Waits (spec §4, §6): the wait placeholders park a workflow with no job
// left (waiting_for_signal / waiting_for_workflows, a _wait context and, for
// workflow waits, workflow_dependencies rows), or settle at once when the
// wait is already satisfied. Whoever unblocks it later (Signal, the
// post-commit wake-up of a terminal dependency, the sweeper, the signal
// poller) settles it under its lock with settleWait.

const msgWaitImpossible = "Workflow wait could not be satisfied."

// runWaitPlaceholder runs __queuety_wait_for_signal and
// __queuety_wait_for_workflows as the worker does: the job is completed
// first (Queue::complete, whatever its status), then the step is evaluated
// (handle_signal_step / handle_wait_for_workflows_step), then the worker's
// `completed` log; all in one transaction here.
func (e *Engine) runWaitPlaceholder(ctx context.Context, job *store.JobRow, tr *jobTrace, start time.Time) error {
	index := int(job.StepIndex.Int64)
	a, err := e.stepTx(ctx, tr, 0, func(a *advanceTx) error {
		tx := a.tx
		if err := tx.CompleteJobAny(job.ID); err != nil {
			return err
		}
		if err := a.waitStep(job.WorkflowID.Int64, job.Handler, index); err != nil {
			return err
		}
		return tx.InsertLogs(e.completedLog(job, job.WorkflowID.Int64, index, time.Since(start)))
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	if err := e.afterCommit(ctx, a); err != nil {
		return err
	}
	if a.parked && job.Handler == HandlerWaitForWorkflows {
		// A dependency that became terminal while this transaction was
		// open found no dependency rows to wake (PHP's race, spec §4.8):
		// evaluate once more now that they are committed.
		t, err := e.reconcileWaiter(ctx, job.WorkflowID.Int64, index, 0, "")
		if err != nil {
			return err
		}
		e.afterTerminal(ctx, t...)
	}
	return nil
}

// waitStep locks the workflow and evaluates its wait step at index, when
// the workflow is still there, at that step and live.
func (a *advanceTx) waitStep(workflowID int64, handler string, index int) error {
	var err error
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
		return err
	}
	if err := a.loadState(); err != nil {
		return err
	}
	step, ok := a.step(index)
	if !ok || step.IsLegacy() {
		return nil
	}
	switch handler {
	case HandlerWaitForSignal:
		if toString(step.field("type")) != string(StepWaitForSignal) || a.current != index ||
			!(liveStatus(a.wf.Status) || a.wf.Status == string(StatusWaitingForSignal)) {
			return nil
		}
		return a.evaluateSignalWait(index, step, true)
	default:
		if toString(step.field("type")) != string(StepWaitForWorkflows) || a.current != index ||
			!(liveStatus(a.wf.Status) || a.wf.Status == string(StatusWaitingForWorkflows)) {
			return nil
		}
		return a.evaluateWorkflowWait(index, step, true)
	}
}

// evaluateWorkflowWait is evaluate_wait_for_workflows_state and what
// follows it on the locked waiter: satisfied ⇒ settle; pending ⇒ park
// (only when park is set: the placeholder parks, a reconcile leaves a
// pending wait as it is); impossible ⇒ fail.
func (a *advanceTx) evaluateWorkflowWait(index int, step Step, park bool) error {
	def := step.waitForWorkflowsDef(StepCommon{})
	ids := def.ResolveIDs(a.state)
	rows, err := a.tx.WorkflowStatuses(ids)
	if err != nil {
		return err
	}
	switch evaluateWorkflowWait(def, ids, rows) {
	case waitSatisfied:
		if err := a.tx.ClearDependencies(a.wf.ID, index); err != nil {
			return err
		}
		// Only now read the states (a wait on many workflows is
		// re-evaluated once per dependency that finishes).
		var completed []int64
		for _, id := range ids {
			if rows[id].Status == string(StatusCompleted) {
				completed = append(completed, id)
			}
		}
		if rows, err = a.tx.WorkflowsByID(completed); err != nil {
			return err
		}
		return a.settleWait(index, workflowWaitOutput(def, ids, rows))
	case waitImpossible:
		if err := a.tx.ClearDependencies(a.wf.ID, index); err != nil {
			return err
		}
		a.state.Delete(KeyWait)
		a.state.Delete(KeyWaitingForSignal)
		return a.failLocked(0, msgWaitImpossible)
	}
	if !park {
		return nil
	}
	if err := a.tx.StoreDependencies(a.wf.ID, index, ids); err != nil {
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
		Set("step_name", rawField(step, "name")).
		Set("group_key", groupKey).
		Set("quorum", quorum)
	output := phpjson.NewObject().
		Set("wait_mode", phpjson.String(string(def.Mode))).
		Set("step_name", rawField(step, "name")).
		Set("group_key", groupKey).
		Set("quorum", quorum).
		Set("result_key", optionalValue(def.ResultKey))
	return a.park(index, step, "workflow", store.StatusWaitingForWorkflows, HandlerWaitForWorkflows,
		waitingFor, def.Mode, def.ResultKey, details, output)
}

// park is set_wait_context, the waiting status and the workflow_waiting
// event. details are the _wait keys after waiting_for (nulls dropped);
// output the event's keys after waiting_for (nulls kept).
func (a *advanceTx) park(index int, step Step, waitType, status, handler string, waitingFor []phpjson.Value,
	mode WaitMode, resultKey string, details, output *phpjson.Object) error {
	before := a.state.Public()
	wait := phpjson.NewObject().
		Set("type", phpjson.String(waitType)).
		Set("step_index", phpjson.Int(int64(index))).
		Set("wait_mode", phpjson.String(string(mode))).
		Set("result_key", optionalValue(resultKey)).
		Set("waiting_for", phpjson.List(waitingFor...))
	for k, v := range details.All() {
		if !v.IsNull() {
			wait.Set(k, v)
		}
	}
	a.state.Set(KeyWait, phpjson.ObjectValue(wait))
	a.state.Delete(KeyWaitingForSignal)
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	if err := a.tx.Park(a.wf.ID, status, b, index); err != nil {
		return err
	}
	out := phpjson.NewObject().
		Set("wait_type", phpjson.String(waitType)).
		Set("waiting_for", phpjson.List(waitingFor...))
	for k, v := range output.All() {
		out.Set(k, v)
	}
	ev, err := waitEvent(a.wf.ID, step, index, handler, "workflow_waiting").
		input(phpjson.ObjectValue(before)).output(phpjson.ObjectValue(out)).
		before(before).after(a.state.Public()).
		context(phpjson.ObjectValue(phpjson.NewObject().Set("wait_type", phpjson.String(waitType)))).build()
	if err != nil {
		return err
	}
	a.parked = true
	return a.tx.InsertEvents(ev)
}

// settleWait is settle_wait_step on the locked workflow: clear _wait,
// merge the output, compensation snapshot, transitions, budget, then
// 'running' (even when the workflow was paused) at the next step with its
// jobs, or 'completed'; the workflow_resumed event. _next_step is ignored.
func (a *advanceTx) settleWait(index int, out *phpjson.Object) error {
	a.settled = true
	before := a.state.Public()
	a.state.Delete(KeyWait)
	a.state.Delete(KeyWaitingForSignal)
	out = stripTrace(out)
	a.state.mergeOutput(out, index)
	step, hasStep := a.step(index)
	a.state.pushCompensation(step, hasStep, index)
	a.state.bumpCounter("transitions", 1)
	if err := a.state.assertBudget(); err != nil {
		return err
	}
	next := index + 1
	isLast := next >= a.wf.TotalSteps
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	if isLast {
		err = a.tx.Complete(a.wf.ID, b, next)
	} else {
		err = a.tx.Resume(a.wf.ID, b, next)
	}
	if err != nil {
		return err
	}
	handler := string(StepSingle)
	if hasStep {
		handler = step.EventHandler()
	}
	ev, err := waitEvent(a.wf.ID, step, index, handler, "workflow_resumed").
		input(phpjson.ObjectValue(before)).output(phpjson.ObjectValue(out)).
		before(before).after(a.state.Public()).build()
	if err != nil {
		return err
	}
	if err := a.tx.InsertEvents(ev); err != nil {
		return err
	}
	if isLast {
		if err := a.tx.InsertLogs(store.WorkflowLog(a.wf.ID, a.wf.Name, a.state.Queue(), store.EventWorkflowCompleted)); err != nil {
			return err
		}
		return a.workflowCompleted(a.wf.ID, a.state)
	}
	ns, ok := a.step(next)
	if !ok {
		return a.failMissingStep(next)
	}
	if err := a.state.assertForEachBudget(ns); err != nil {
		return err
	}
	return a.e.enqueueFor(a.tx, a.wf.ID, a.state, ns, next)
}

// waitEvent starts a job-less event row of the step at index.
func waitEvent(workflowID int64, step Step, index int, handler, event string) *eventBuilder {
	t := &jobTrace{stepName: itoa(index), stepType: string(StepSingle)}
	if step.Value().Kind() != phpjson.KindNull {
		t.stepName, t.stepType = step.Name(index), string(step.Type())
	}
	return &eventBuilder{ev: store.WorkflowEvent{
		WorkflowID: workflowID, StepIndex: index,
		StepName: store.String(t.stepName), StepType: store.String(t.stepType),
		Handler: handler, Event: event,
	}}
}

// rawField is $step_def[key] ?? null.
func rawField(step Step, key string) phpjson.Value {
	v, _ := step.Get(key)
	return v
}

func optionalValue(s string) phpjson.Value {
	if s == "" {
		return phpjson.Null()
	}
	return phpjson.String(s)
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
func evaluateWorkflowWait(def *WaitForWorkflowsStep, ids []int64, rows map[int64]store.DependencyRow) waitEvaluation {
	if len(ids) == 0 {
		if def.Mode == WaitAll {
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
		case string(StatusCompleted):
			completed++
		case string(StatusFailed), string(StatusCancelled):
			failed++
		default:
			active++
		}
	}
	switch def.Mode {
	case WaitAny:
		if completed >= 1 {
			return waitSatisfied
		}
		if active == 0 {
			return waitImpossible
		}
		return waitPending
	case WaitQuorum:
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
func workflowWaitOutput(def *WaitForWorkflowsStep, ids []int64, rows map[int64]store.DependencyRow) *phpjson.Object {
	results := phpjson.NewObject()
	for _, id := range ids {
		r, ok := rows[id]
		if !ok || r.Status != string(StatusCompleted) {
			continue
		}
		public := phpjson.NewObject()
		if s, err := ParseState([]byte(r.State)); err == nil {
			public = s.Public()
		}
		results.Set(strconv.FormatInt(id, 10), phpjson.ObjectValue(public))
		if def.Mode == WaitAny {
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
		o := phpArray(v)
		for k, val := range o.All() {
			if !IsReserved(k) {
				out.Set(k, val)
			}
		}
		if def.Mode == WaitAny && o.Len() > 0 {
			break
		}
	}
	return out
}
