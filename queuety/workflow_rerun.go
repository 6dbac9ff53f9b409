package queuety

import (
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/workflow"
)

// RerunOption adjusts RetryWorkflow and ResumeWorkflow.
type RerunOption func(*rerunOptions)

type rerunOptions struct {
	unread func(class string)
}

// OnUnreadClassSettings calls fn with each step class a retry or resume
// enqueues a job for whose own settings it cannot read: the class has no
// Go step handler and reg has no PHP pool as its fallback, so the job
// takes the workflow's settings where the plugin would apply the class's
// #[QueuetyStep] attributes and config() (max_attempts, queue, …). With a
// pool fn is never called: the pool reads them.
func OnUnreadClassSettings(fn func(class string)) RerunOption {
	return func(o *rerunOptions) { o.unread = fn }
}

// rerunEngine is engine(reg) with opts applied.
func (c *Client) rerunEngine(reg *Registry, opts []RerunOption) *engine.Engine {
	var o rerunOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.unread == nil || reg.classMetadata() != nil {
		return c.engine(reg)
	}
	// The engine asks a class source only about classes without a Go step
	// handler (placeholders aside), so each question is a class whose
	// settings nobody here can read; the callback is this call's, so is
	// the engine.
	cfg := c.engineConfig(reg)
	cfg.Metadata = unreadClasses(o.unread)
	return engine.NewEngine(cfg)
}

// unreadClasses is a class metadata source that knows nothing and reports
// each class it is asked about.
type unreadClasses func(class string)

func (f unreadClasses) HandlerMetadata(class string) workflow.HandlerMetadata {
	f(class)
	return workflow.HandlerMetadata{}
}
