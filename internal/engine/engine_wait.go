package engine

import (
	"context"
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

// ParkParams is a step parking its workflow on a wait (Advance.Park).
type ParkParams struct {
	// Index and Step are the step that waits.
	Index int
	Step  workflow.Step
	// WaitType is the _wait "type" (Wait.WaitType), Status the workflow's
	// waiting status, Handler the step's placeholder (the event's
	// handler).
	WaitType, Status, Handler string
	// WaitingFor are the signal names or workflow ids waited on; Mode and
	// ResultKey the wait's.
	WaitingFor []phpjson.Value
	Mode       workflow.WaitMode
	ResultKey  string
	// Details are the _wait keys after waiting_for (nulls dropped);
	// Output the workflow_waiting event's keys after waiting_for (nulls
	// kept).
	Details, Output *phpjson.Object
}

// park is set_wait_context, the waiting status and the workflow_waiting
// event.
func (a *Advance) park(p *ParkParams) error {
	before := a.state.Public()
	wait := phpjson.NewObject().
		Set("type", phpjson.String(p.WaitType)).
		Set("step_index", phpjson.Int(int64(p.Index))).
		Set("wait_mode", phpjson.String(string(p.Mode))).
		Set("result_key", optionalValue(p.ResultKey)).
		Set("waiting_for", phpjson.List(p.WaitingFor...))
	for k, v := range p.Details.All() {
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
	if err := a.tx.Park(a.wf.ID, p.Status, b, p.Index); err != nil {
		return err
	}
	out := phpjson.NewObject().
		Set("wait_type", phpjson.String(p.WaitType)).
		Set("waiting_for", phpjson.List(p.WaitingFor...))
	for k, v := range p.Output.All() {
		out.Set(k, v)
	}
	ev, err := waitEvent(a.wf.ID, p.Step, p.Index, p.Handler, "workflow_waiting").
		input(phpjson.ObjectValue(before)).output(phpjson.ObjectValue(out)).
		before(before).after(a.state.Public()).
		context(phpjson.ObjectValue(phpjson.NewObject().Set("wait_type", phpjson.String(p.WaitType)))).build()
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
func (a *Advance) settleWait(ctx context.Context, index int, out *phpjson.Object) error {
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
		return a.workflowCompleted(ctx, a.wf.ID, a.state)
	}
	ns, ok := a.step(next)
	if !ok {
		return a.failMissingStep(next)
	}
	if err := a.assertEnqueueBudget(a.state, ns); err != nil {
		return err
	}
	return a.enqueueFor(a.wf.ID, a.state, ns, next)
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
