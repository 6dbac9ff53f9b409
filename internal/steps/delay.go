package steps

import (
	"context"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// delay is a delay step (builder: Delay): its placeholder job is enqueued
// available after delay_seconds (StepJobs) and, once claimed, completes the
// step with an empty output.
type delay struct{}

func (delay) Type() workflow.StepType { return workflow.StepDelay }

func (delay) Placeholder() string { return workflow.HandlerDelay }

// Admit runs every claimed job.
func (delay) Admit(context.Context, *engine.AdmitParams) engine.Admission {
	return engine.Admission{}
}

func (delay) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	d := r.Elapsed()
	// The engine and the worker both log `completed` (spec §9).
	return r.Advance(ctx, phpjson.NewObject(), d, r.CompletedLog(d))
}
