package queuetytest

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// RunJob runs the Go handler reg gives jobs of handler (registered under
// the name, else the fallback) on the first attempt of a job dispatched
// with payload and opts, as a worker runs a claimed job: the payload
// encoded as stored and decoded without Queuety's reserved keys
// (queuety.NewJob). It returns the handler's error; a panic is returned as
// a *queuety.PanicError, as the worker records it. Nothing is retried and
// job.Heartbeat does nothing.
func RunJob(ctx context.Context, reg *queuety.Registry, handler string, payload any, opts ...queuety.DispatchOption) error {
	h, ok := reg.Handler(handler)
	if !ok {
		return fmt.Errorf("queuetytest: the registry has no Go handler for %q", handler)
	}
	job, err := queuety.NewJob(handler, payload, opts...)
	if err != nil {
		return err
	}
	return catch(func() error { return h.Handle(ctx, job) })
}

// RunStep runs the Go step handler (RegisterStep, or a local activity's,
// RegisterLocalActivity) registered under class on a copy of state, and
// returns the output the engine would merge into the workflow's state. A
// panic is returned as a *queuety.PanicError. queuety.StepHeartbeat does
// nothing outside a worker, and queuety.LocalActivityHeartbeat returns an
// error (there is no activity attempt to renew).
func RunStep(ctx context.Context, reg *queuety.Registry, class string, state *phpjson.Object) (*phpjson.Object, error) {
	fn, ok := reg.Steps().LookupStep(class)
	if !ok {
		return nil, fmt.Errorf("queuetytest: the registry has no Go step handler for %q", class)
	}
	st, err := copyState(state)
	if err != nil {
		return nil, err
	}
	var out *phpjson.Object
	err = catch(func() (err error) { out, err = fn(ctx, st); return err })
	return out, err
}

// RunItemStep runs the for_each item handler (RegisterItemStep) registered
// under class on item number index of the list, with a copy of state, and
// returns its output.
func RunItemStep(ctx context.Context, reg *queuety.Registry, class string, state *phpjson.Object, item phpjson.Value, index int64) (*phpjson.Object, error) {
	fn, ok := reg.Steps().LookupItem(class)
	if !ok {
		return nil, fmt.Errorf("queuetytest: the registry has no Go item handler for %q", class)
	}
	st, err := copyState(state)
	if err != nil {
		return nil, err
	}
	var out *phpjson.Object
	err = catch(func() (err error) { out, err = fn(ctx, st, item, index); return err })
	return out, err
}

// copyState is state as a step reads it from its row: a copy, so the
// handler's changes to it do not reach the caller's object.
func copyState(state *phpjson.Object) (*workflow.State, error) {
	if state == nil {
		return workflow.NewState(nil), nil
	}
	b, err := phpjson.Encode(phpjson.ObjectValue(state))
	if err != nil {
		return nil, err
	}
	return workflow.ParseState(b)
}

// catch runs fn, turning a panic into the *queuety.PanicError a worker
// would record.
func catch(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &queuety.PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return fn()
}
