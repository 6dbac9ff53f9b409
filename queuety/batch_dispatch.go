package queuety

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// BatchSpec is a batch as Queuety::create_batch() builds it: an optional
// name, the default queue of its jobs, and its callback classes (PHP
// classes, or names registered with RegisterBatchCallback).
type BatchSpec struct {
	Name                 string
	Queue                string // default "default"
	Then, Catch, Finally string
	AllowFailures        bool
}

// BatchJob is one job of a batch; Options apply after the batch's queue.
type BatchJob struct {
	Handler string
	Payload any
	Options []DispatchOption
}

// DispatchBatch writes a batch and its jobs as BatchBuilder::dispatch
// does (the batch row first, `options` holding only the callbacks set and
// "allow_failures":true when set), in one transaction. It returns the
// batch's id and its jobs' ids in order.
func (c *Client) DispatchBatch(ctx context.Context, spec BatchSpec, jobs []BatchJob) (int64, []int64, error) {
	opts := phpjson.NewObject()
	for _, cb := range []struct{ key, class string }{{"then", spec.Then}, {"catch", spec.Catch}, {"finally", spec.Finally}} {
		if cb.class != "" {
			opts.Set(cb.key, phpjson.String(cb.class))
		}
	}
	if spec.AllowFailures {
		opts.Set("allow_failures", phpjson.Bool(true))
	}
	options, err := phpjson.Encode(phpjson.ObjectValue(opts))
	if err != nil {
		return 0, nil, err
	}
	queue := spec.Queue
	if queue == "" {
		queue = DefaultQueue
	}
	rows := make([]store.InsertJob, len(jobs))
	for i, j := range jobs {
		body, err := EncodePayload(j.Payload)
		if err != nil {
			return 0, nil, fmt.Errorf("batch job %d: %w", i, err)
		}
		p, err := dispatchParams(j.Handler, append([]DispatchOption{OnQueue(queue)}, j.Options...))
		if err != nil {
			return 0, nil, fmt.Errorf("batch job %d: %w", i, err)
		}
		if p.Unique || p.BatchID.Valid || p.WorkflowID.Valid || p.SessionID != "" {
			return 0, nil, fmt.Errorf("batch job %d: Unique, InBatch and worker sessions do not apply to a batch's jobs", i)
		}
		p.Payload = body
		rows[i] = p
	}
	return c.store.InsertBatch(ctx, spec.Name, options, rows)
}
