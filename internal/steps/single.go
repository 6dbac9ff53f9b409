package steps

import "github.com/queuety-go/queuety/workflow"

// single is a single step (builder: Then), and what a legacy string step,
// a step without a type and a type the runtime does not know run as: one
// handler job (StepJobs) settled by the engine's own step transaction
// (finalize_step_completion). It has no hook: it is the behaviour the
// other kinds fall back to.
type single struct{}

// Type: the step has no hook of its own, so the engine runs it as a single
// step, and a worker may run its job right after the commit that enqueued
// it (internal/engine/chain.go). A step of a type the runtime does not
// know runs as a single step but is not chained: it has no kind.
func (single) Type() workflow.StepType { return workflow.StepSingle }
