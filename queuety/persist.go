package queuety

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// handBack returns attempts to pending with the attempt restored.
func (w *Worker) handBack(attempts []store.Attempt) {
	if len(attempts) == 0 {
		return
	}
	if err := w.persist("hand back", func(ctx context.Context) error {
		n, err := w.store.UnclaimJobs(ctx, attempts)
		if err == nil {
			w.stats.handedBack.Add(int64(n))
		}
		return err
	}); err != nil {
		w.log.Error("handing jobs back failed; the stale sweep will recover them", "jobs", len(attempts), "err", err)
	}
}

// persist runs a state write, retrying through lost connections with
// backoff. It returns nil once the write is done, or the error it gave up
// on: one a retry cannot fix (the server refused the write itself), or any
// error once the process is shutting down for good. Either way the row
// stays processing and the stale sweep recovers it unless the caller does
// better.
func (w *Worker) persist(what string, fn func(ctx context.Context) error) error {
	delay := 50 * time.Millisecond
	deadline := time.Now().Add(w.cfg.ShutdownGrace + time.Minute)
	for {
		// The writes come from attempts that have ended (their contexts
		// too) and from Stop: each gets its own bounded context.
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryableWrite(err) {
			return err
		}
		stopping := w.claim.stopped()
		if stopping && time.Now().After(deadline) {
			w.log.Error("giving up writing job state while stopping; the stale sweep will recover it", "what", what, "err", err)
			return err
		}
		w.log.Warn("writing job state failed; retrying", "what", what, "err", err, "in", delay)
		time.Sleep(delay + rand.N(delay/2))
		delay = min(delay*2, 5*time.Second)
	}
}

// writeTimeout bounds one try of a state write.
const writeTimeout = 30 * time.Second

// retryableWrite reports whether a failed write may succeed when simply
// tried again.
func retryableWrite(err error) bool {
	return store.ConnectionLost(err) || store.Transient(err) || errors.Is(err, context.DeadlineExceeded)
}
