package steps

import (
	"context"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// parallel is a parallel step (builder: Parallel): one handler job per
// branch (StepJobs), each merged as it completes; the last one settles the
// step.
type parallel struct{}

func (parallel) Type() workflow.StepType { return workflow.StepParallel }

// Item: a parallel branch carries no item; it runs its own class.
func (parallel) Item(string) (engine.BranchItem, bool) { return engine.BranchItem{}, false }

// FailBranch: no branch of a parallel step carries an item, so none gets
// here.
func (parallel) FailBranch(context.Context, *engine.Advance, workflow.Step, string) (bool, error) {
	return false, nil
}

// Retry: a retried parallel step re-enqueues every branch (the engine's
// retry of any step); the step has no runtime to reset.
func (parallel) Retry(context.Context, *engine.Advance, workflow.Step) error { return nil }

// CheckEnqueue: a parallel step has no budget of its own.
func (parallel) CheckEnqueue(*workflow.State, workflow.Step) error { return nil }

// CompleteBranch settles one branch of a parallel step: its output is
// merged at once (last writer wins), and the branch that brings the count
// of completed jobs of the step to the branch count settles the step.
// _next_step is ignored here. The count includes every completed job ever
// recorded for the step, as in PHP (spec §3.3).
func (parallel) CompleteBranch(ctx context.Context, a *engine.Advance, step workflow.Step, out *phpjson.Object) error {
	stateBefore := a.State().Public()
	out = engine.StripTrace(out)
	a.MergeOutput(out)
	engine.BumpCounter(a.State(), "cost_units", a.Job().CostUnits)
	total := len(workflow.ParallelBranches(step.Object()))

	if err := a.Tx().CompleteJobAny(a.Job().ID); err != nil {
		return err
	}
	completed, err := a.Tx().CountCompletedStepJobs(a.Workflow().ID, a.Current())
	if err != nil {
		return err
	}
	b, err := a.State().Encode()
	if err != nil {
		return err
	}
	if err := a.Tx().SetState(a.Workflow().ID, b); err != nil {
		return err
	}
	if err := a.Tx().InsertLogs(a.CompletedLog()); err != nil {
		return err
	}
	input, context, ok := a.ConsumeTrace()
	if !ok || input.IsNull() {
		input = phpjson.ObjectValue(stateBefore)
	}
	if !phpjson.IsArray(context) {
		context = phpjson.Null()
	}
	branchEv, err := a.NewEvent(workflow.EventStepBranchCompleted).
		Input(input).Output(phpjson.ObjectValue(out)).Before(stateBefore).After(a.State().Public()).
		Context(context).Duration(a.Duration()).Build()
	if err != nil {
		return err
	}
	if err := a.Tx().InsertEvents(branchEv); err != nil {
		return err
	}
	if completed < total {
		return nil
	}

	// The state was just written under the row lock, so re-reading it (as
	// PHP does) gives the same state.
	doneEv, err := a.NewEvent(workflow.EventStepCompleted).
		Input(phpjson.ObjectValue(stateBefore)).Output(phpjson.ObjectValue(out)).Before(stateBefore).
		After(a.State().Public()).Duration(a.Duration()).Build()
	if err != nil {
		return err
	}
	if err := a.Tx().InsertEvents(doneEv); err != nil {
		return err
	}
	next := a.Current() + 1
	isLast := next >= a.Workflow().TotalSteps
	engine.PushCompensation(a.State(), step, a.Current())
	engine.BumpCounter(a.State(), "transitions", 1)
	if err := engine.AssertBudget(a.State()); err != nil {
		return err
	}
	if err := a.WriteStep(next, isLast); err != nil {
		return err
	}
	return a.AfterStep(ctx, next, isLast)
}
