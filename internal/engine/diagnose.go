package engine

import (
	"context"
	"fmt"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// StuckWorkflows finds, among the oldest scan.Workflows live workflows,
// those whose state cannot be read, whose current step is missing from
// their definition, or whose definition ends before total_steps. The
// server narrows the candidates; each is then parsed here, as the
// engine would read it (the server's JSON functions stop at 32 levels).
func (e *Engine) StuckWorkflows(ctx context.Context, scan store.StuckScan) ([]workflow.StuckWorkflow, error) {
	rows, err := e.store.StuckWorkflowCandidates(ctx, scan)
	if err != nil {
		return nil, err
	}
	var out []workflow.StuckWorkflow
	for _, r := range rows {
		if s, stuck := diagnoseWorkflow(r); stuck {
			out = append(out, s)
		}
	}
	return out, nil
}

// diagnoseWorkflow decides whether a live workflow row can never finish
// as it is, and why.
func diagnoseWorkflow(r store.WorkflowCandidate) (workflow.StuckWorkflow, bool) {
	s := workflow.StuckWorkflow{ID: r.ID, Name: r.Name, Status: r.Status, Queue: "default"}
	state, err := workflow.ParseState([]byte(r.State))
	if err != nil {
		s.Kind, s.Reason = workflow.StuckStateCorrupt, err.Error()+": no step can run and nothing can be compensated"
		return s, true
	}
	s.Queue = state.Queue()
	usable := len(state.Steps())
	switch {
	case r.CurrentStep < r.TotalSteps && r.CurrentStep >= usable:
		s.Kind = workflow.StuckCurrentStepMissing
		s.Reason = fmt.Sprintf("current step %d is missing: _steps has %d usable steps of total_steps %d", r.CurrentStep, usable, r.TotalSteps)
	case usable < r.TotalSteps:
		s.Kind = workflow.StuckStepsShort
		s.Reason = fmt.Sprintf("_steps has %d usable steps of total_steps %d: the workflow fails when it reaches step %d", usable, r.TotalSteps, usable)
	default:
		return s, false
	}
	return s, true
}
