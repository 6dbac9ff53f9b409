package queuety

import (
	"context"
	"fmt"
	"time"
)

// Built-in handlers of the stock binary, used by `queuety dev`, `queuety
// bench` and smoke tests. Applications register their own handlers in a
// binary of their own (see the package example).
const (
	HandlerNoop  = "queuety.noop"  // does nothing
	HandlerSleep = "queuety.sleep" // sleeps payload "ms" milliseconds, heartbeating progress
	HandlerFail  = "queuety.fail"  // fails with payload "message"
)

// RegisterBuiltins adds the built-in handlers to reg.
func RegisterBuiltins(reg *Registry) {
	reg.HandleFunc(HandlerNoop, func(context.Context, *Job) error { return nil })
	reg.Register(HandlerSleep, Typed(func(ctx context.Context, j *Job, p struct {
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
	reg.Register(HandlerFail, Typed(func(ctx context.Context, j *Job, p struct {
		Message string `json:"message"`
	}) error {
		if p.Message == "" {
			p.Message = "queuety.fail always fails"
		}
		return fmt.Errorf("%s", p.Message)
	}))
}
