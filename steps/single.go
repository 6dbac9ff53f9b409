package steps

import "github.com/queuety-go/queuety/workflow"

// single is a single step (builder: Then), and what a legacy string step,
// a step without a type and a type the runtime does not know run as: one
// handler job (StepJobs) settled by the engine's own step transaction
// (finalize_step_completion). It implements no hook: it is the behaviour
// every other kind falls back to.
type single struct{}

func (single) Type() workflow.StepType { return workflow.StepSingle }
