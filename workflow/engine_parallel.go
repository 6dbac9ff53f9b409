package workflow

import "github.com/queuety-go/queuety/internal/phpjson"

// parallelBranch settles one branch of a parallel step: its output is
// merged at once (last writer wins), and the branch that brings the count
// of completed jobs of the step to the branch count settles the step.
// _next_step is ignored here. The count includes every completed job ever
// recorded for the step, as in PHP (spec §3.3).
func (a *advanceTx) parallelBranch(step Step, out *phpjson.Object) error {
	stateBefore := a.state.Public()
	out = stripTrace(out)
	a.state.mergeOutput(out, a.current)
	a.state.bumpCounter("cost_units", a.job.CostUnits)
	total := len(ParallelBranches(step.Object()))

	if err := a.tx.CompleteJobAny(a.job.ID); err != nil {
		return err
	}
	completed, err := a.tx.CountCompletedStepJobs(a.wf.ID, a.current)
	if err != nil {
		return err
	}
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	if err := a.tx.SetState(a.wf.ID, b); err != nil {
		return err
	}
	if err := a.tx.InsertLogs(a.e.completedLog(a.job, a.wf.ID, a.current, a.dur)); err != nil {
		return err
	}
	input, context, ok := a.trace.consume()
	if !ok || input.IsNull() {
		input = phpjson.ObjectValue(stateBefore)
	}
	if !isArray(context) {
		context = phpjson.Null()
	}
	branchEv, err := newEvent(a.wf.ID, a.job, a.current, a.trace, a.job.Handler, EventStepBranchCompleted).
		input(input).output(phpjson.ObjectValue(out)).before(stateBefore).after(a.state.Public()).
		context(context).duration(a.dur).build()
	if err != nil {
		return err
	}
	if err := a.tx.InsertEvents(branchEv); err != nil {
		return err
	}
	if completed < total {
		return nil
	}

	// The state was just written under the row lock, so re-reading it (as
	// PHP does) gives the same state.
	doneEv, err := newEvent(a.wf.ID, a.job, a.current, a.trace, a.job.Handler, EventStepCompleted).
		input(phpjson.ObjectValue(stateBefore)).output(phpjson.ObjectValue(out)).before(stateBefore).
		after(a.state.Public()).duration(a.dur).build()
	if err != nil {
		return err
	}
	if err := a.tx.InsertEvents(doneEv); err != nil {
		return err
	}
	next := a.current + 1
	isLast := next >= a.wf.TotalSteps
	a.state.pushCompensation(step, true, a.current)
	a.state.bumpCounter("transitions", 1)
	if err := a.state.assertBudget(); err != nil {
		return err
	}
	if err := a.writeStep(next, isLast); err != nil {
		return err
	}
	return a.afterStep(next, isLast)
}
