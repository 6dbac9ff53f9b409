// Package builtins holds the handlers every binary built on queuety/cli
// carries, used by `queuety dev`, `queuety bench` and smoke tests. They
// are the command line's, not the library's: an application registers its
// own handlers on a queuety.Registry.
package builtins

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/queuety"
)

// The built-in handlers' names (the jobs.handler column).
const (
	Noop  = "queuety.noop"  // does nothing
	Sleep = "queuety.sleep" // sleeps payload "ms" milliseconds, heartbeating progress
	Fail  = "queuety.fail"  // fails with payload "message"
)

// Register adds the built-in handlers to reg.
func Register(reg *queuety.Registry) {
	reg.HandleFunc(Noop, func(context.Context, *queuety.Job) error { return nil })
	reg.Register(Sleep, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		MS int `json:"ms"`
	}) error {
		d := time.Duration(p.MS) * time.Millisecond
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return j.Heartbeat(ctx, map[string]any{"slept_ms": p.MS})
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}))
	reg.Register(Fail, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		Message string `json:"message"`
	}) error {
		if p.Message == "" {
			p.Message = "queuety.fail always fails"
		}
		return fmt.Errorf("%s", p.Message)
	}))
}
