package engine

import (
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Waits (spec §4, §6): the wait placeholders park a workflow with no job
// left (waiting_for_signal / waiting_for_workflows, a _wait context and, for
// workflow waits, workflow_dependencies rows), or settle at once when the
// wait is already satisfied. Whoever unblocks it later (Signal, the
// post-commit wake-up of a terminal dependency, the sweeper, the signal
// poller) settles it under its lock with settleWait.

// park is set_wait_context, the waiting status and the workflow_waiting
// event. details are the _wait keys after waiting_for (nulls dropped);
// output the event's keys after waiting_for (nulls kept).
func (a *Advance) park(index int, step workflow.Step, waitType, status, handler string, waitingFor []phpjson.Value,
	mode workflow.WaitMode, resultKey string, details, output *phpjson.Object) error {
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
	a.state.Set(workflow.KeyWait, phpjson.ObjectValue(wait))
	a.state.Delete(workflow.KeyWaitingForSignal)
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
func (a *Advance) settleWait(index int, out *phpjson.Object) error {
	a.settled = true
	before := a.state.Public()
	a.state.Delete(workflow.KeyWait)
	a.state.Delete(workflow.KeyWaitingForSignal)
	out = stripTrace(out)
	mergeOutput(a.state, out, index)
	step, hasStep := a.step(index)
	pushCompensation(a.state, step, hasStep, index)
	bumpCounter(a.state, "transitions", 1)
	if err := assertBudget(a.state); err != nil {
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
	handler := string(workflow.StepSingle)
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
	if err := a.assertEnqueueBudget(a.state, ns); err != nil {
		return err
	}
	return a.e.enqueueFor(a.tx, a.wf.ID, a.state, ns, next)
}

// waitEvent starts a job-less event row of the step at index.
func waitEvent(workflowID int64, step workflow.Step, index int, handler, event string) *eventBuilder {
	t := &jobTrace{stepName: strconv.Itoa(index), stepType: string(workflow.StepSingle)}
	if step.Value().Kind() != phpjson.KindNull {
		t.stepName, t.stepType = step.Name(index), string(step.Type())
	}
	return &eventBuilder{ev: store.WorkflowEvent{
		WorkflowID: workflowID, StepIndex: index,
		StepName: store.String(t.stepName), StepType: store.String(t.stepType),
		Handler: handler, Event: event,
	}}
}

func optionalValue(s string) phpjson.Value {
	if s == "" {
		return phpjson.Null()
	}
	return phpjson.String(s)
}
