// Package queuetytest tests code written against queuety without a
// database: it runs a Go job handler or a workflow step handler the way a
// worker runs it, and records what the code under test dispatched. It is
// the Go counterpart of the plugin's Queuety::fake().
//
// Code that dispatches takes a queuety.Dispatcher (a *queuety.Client in
// the program); its test gives it a *Dispatcher and reads the jobs and
// workflows it recorded:
//
//	d := queuetytest.NewDispatcher()
//	err := queuetytest.RunJob(ctx, app.Registry(d), `App\Jobs\Signup`, map[string]any{"email": "a@b.c"})
//	jobs := d.JobsOf(`App\Jobs\SendEmail`)
package queuetytest

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// Dispatcher is a queuety.Dispatcher that records every dispatch instead
// of writing rows. A dispatch is checked as the client checks it (handler
// name, payload, options, a workflow's local activities), so code that
// would fail against the database fails here too. Safe for concurrent use.
type Dispatcher struct {
	// Err, when set, fails every valid dispatch with it and records
	// nothing: the code's path when the database refuses the write.
	Err error

	mu        sync.Mutex
	jobs      []Job
	workflows []Workflow
}

var _ queuety.Dispatcher = (*Dispatcher)(nil)

// NewDispatcher returns a Dispatcher with nothing recorded.
func NewDispatcher() *Dispatcher { return &Dispatcher{} }

// Job is one recorded Dispatch.
type Job struct {
	// ID is the id the dispatch returned: 1 for the first job, then 2, …
	ID          int64
	Handler     string
	Queue       string
	Priority    queuety.Priority
	Delay       time.Duration
	MaxAttempts int
	// Payload is the stored payload, decoded (Queuety's reserved keys
	// kept).
	Payload phpjson.Value
	// Row is every column the dispatch would write (the payload's exact
	// bytes, dependencies, batch, concurrency group, worker session).
	Row queuety.InsertRow
}

// Decode unmarshals the payload into v as a handler's Job.Decode would.
func (j Job) Decode(v any) error { return (&queuety.Job{Payload: j.Payload}).Decode(v) }

// Workflow is one recorded DispatchWorkflow.
type Workflow struct {
	// ID is the id the dispatch returned: 1 for the first workflow, then
	// 2, …
	ID   int64
	Name string
	// State is the workflow's first state: the builder's input with the
	// definition's reserved keys (State.Public() is the input alone,
	// State.Steps() the steps).
	State *workflow.State
	// Dispatch is what was dispatched.
	Dispatch *workflow.Dispatch
}

// Dispatch records a job as Client.Dispatch would insert it. With
// queuety.Unique and a recorded job of the same handler and payload bytes
// (every recorded job is still pending: nothing runs them), it returns
// that job's id with Existing, as the client does.
func (d *Dispatcher) Dispatch(ctx context.Context, handler string, payload any, opts ...queuety.DispatchOption) (queuety.Dispatched, error) {
	if err := ctx.Err(); err != nil {
		return queuety.Dispatched{}, err
	}
	row, err := queuety.DispatchRow(handler, payload, opts...)
	if err != nil {
		return queuety.Dispatched{}, err
	}
	v, err := phpjson.Decode(row.Payload)
	if err != nil {
		return queuety.Dispatched{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Err != nil {
		return queuety.Dispatched{}, d.Err
	}
	if row.Unique {
		for _, j := range d.jobs {
			if j.Handler == row.Handler && bytes.Equal(j.Row.Payload, row.Payload) {
				return queuety.Dispatched{ID: j.ID, Existing: true}, nil
			}
		}
	}
	j := Job{
		ID: int64(len(d.jobs) + 1), Handler: row.Handler, Queue: row.Queue, Priority: queuety.Priority(row.Priority),
		Delay: row.Delay, MaxAttempts: row.MaxAttempts, Payload: v, Row: row,
	}
	d.jobs = append(d.jobs, j)
	return queuety.Dispatched{ID: j.ID}, nil
}

// DispatchWorkflow records a workflow as Client.DispatchWorkflow would
// store it. An idempotency key already recorded returns that workflow's id
// with existing=true, as the client does.
func (d *Dispatcher) DispatchWorkflow(ctx context.Context, wd *workflow.Dispatch) (id int64, existing bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if err := workflow.CheckLocalActivities(wd); err != nil {
		return 0, false, err
	}
	st, err := workflow.ParseState(wd.Workflow.State)
	if err != nil {
		return 0, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Err != nil {
		return 0, false, d.Err
	}
	if wd.IdempotencyKey != "" {
		for _, w := range d.workflows {
			if w.Dispatch.IdempotencyKey == wd.IdempotencyKey {
				return w.ID, true, nil
			}
		}
	}
	w := Workflow{ID: int64(len(d.workflows) + 1), Name: wd.Workflow.Name, State: st, Dispatch: wd}
	d.workflows = append(d.workflows, w)
	return w.ID, false, nil
}

// Jobs are the recorded jobs, in dispatch order.
func (d *Dispatcher) Jobs() []Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.jobs)
}

// JobsOf are the recorded jobs of one handler, in dispatch order.
func (d *Dispatcher) JobsOf(handler string) []Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Job
	for _, j := range d.jobs {
		if j.Handler == handler {
			out = append(out, j)
		}
	}
	return out
}

// Workflows are the recorded workflows, in dispatch order.
func (d *Dispatcher) Workflows() []Workflow {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.workflows)
}
