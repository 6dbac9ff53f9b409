package queuety

import (
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// NewJob is the job a handler would see on the first attempt of a job
// dispatched with handler, payload and opts, built without a database:
// the payload encoded as Dispatch stores it (RawPayload), then decoded with
// Queuety's reserved keys removed as the worker removes them (Payload). It
// has no row (ID 0) and no worker, so Heartbeat does nothing. It is for
// running a handler outside a worker: queuetytest.RunJob.
func NewJob(handler string, payload any, opts ...DispatchOption) (*Job, error) {
	row, err := dispatchRow(handler, payload, opts)
	if err != nil {
		return nil, err
	}
	v, err := phpjson.Decode(row.Payload)
	if err != nil {
		return nil, err
	}
	return &Job{
		Queue: row.Queue, Handler: row.Handler, Priority: Priority(row.Priority),
		Attempt: 1, MaxAttempts: row.MaxAttempts,
		Payload: stripReserved(v), RawPayload: row.Payload,
	}, nil
}

// DispatchRow is the jobs row Dispatch would insert for handler, payload
// and opts (the payload's stored bytes, every option applied and
// checked), computed without a database. queuetytest's recording
// dispatcher keeps it.
func DispatchRow(handler string, payload any, opts ...DispatchOption) (InsertRow, error) {
	p, err := dispatchRow(handler, payload, opts)
	if err != nil {
		return InsertRow{}, err
	}
	return rowview.Insert(&p), nil
}

// dispatchRow is DispatchRow's row, as the store inserts it.
func dispatchRow(handler string, payload any, opts []DispatchOption) (store.InsertJob, error) {
	body, err := EncodePayload(payload)
	if err != nil {
		return store.InsertJob{}, err
	}
	p, err := dispatchParams(handler, opts)
	if err != nil {
		return store.InsertJob{}, err
	}
	p.Payload = body
	return p, nil
}

// Handler is the Go handler a worker with this registry runs for jobs of
// handler name: the one registered under it, else the fallback. ok is false
// when the worker would leave such jobs to others.
func (r *Registry) Handler(name string) (h Handler, ok bool) {
	reg, ok := r.lookup(name)
	return reg.h, ok
}
