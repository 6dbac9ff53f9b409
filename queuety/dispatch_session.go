package queuety

import (
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// InWorkerSession binds a plain job to worker session sessionID, with the
// seed's WorkerSessionOptions the workflow builder takes too (zero values
// are "not set"): it is claimed only by a worker the session admits
// (registered on the session's queue, advertising its requirements), and
// its session is created or reused then. The options are validated with the library's
// messages. Routing follows durable-workflow's precedence: a queue given
// with OnQueue (other than the default) wins, else the session's queue,
// else the default queue; a session without a queue records the job's.
func InWorkerSession(sessionID string, opts workflow.WorkerSessionOptions) DispatchOption {
	return func(p *dispatchColumns) error {
		id, snapshot, err := opts.Snapshot(sessionID)
		if err != nil {
			return err
		}
		b, err := phpjson.Encode(snapshot)
		if err != nil {
			return fmt.Errorf("worker session: %w", err)
		}
		// The authoring snapshot; settleWorkerSession normalizes it once
		// the queue is known, whatever the order of the options.
		p.SessionID, p.WorkerSession = id, b
		return nil
	}
}

// settleWorkerSession resolves a bound job's queue and stores the
// normalized worker_session (defaults applied) the claim side reads.
func settleWorkerSession(p *store.InsertJob) error {
	if p.SessionID == "" {
		return nil
	}
	v, err := phpjson.Decode(p.WorkerSession)
	if err != nil {
		return fmt.Errorf("worker session: %w", err)
	}
	o, err := sessions.ParseOptions(v)
	if err != nil {
		return err
	}
	n := o.Normalize()
	switch {
	case n.Queue != nil && p.Queue == DefaultQueue:
		p.Queue = *n.Queue
	case n.Queue == nil:
		q := p.Queue
		n.Queue = &q
	}
	if p.WorkerSession, err = phpjson.Encode(n.Snapshot()); err != nil {
		return fmt.Errorf("worker session: %w", err)
	}
	return nil
}
