package queuety

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// stateWriter writes the state of attempts that ended (completions,
// failures, hand-backs) through lost connections and deadlocks: each try
// gets its own bounded context, the tries back off, and once the worker is
// stopping it gives up after the shutdown grace, leaving the row to the
// stale sweep.
type stateWriter struct {
	store *store.Store
	log   *slog.Logger
	// grace is Config.ShutdownGrace; stopping reports that Stop began.
	grace    time.Duration
	stopping func() bool
	// handedBack counts the attempts handBack restored (WorkerStats).
	handedBack *atomic.Int64
}

// handBack returns attempts to pending with the attempt restored.
func (s *stateWriter) handBack(ctx context.Context, attempts []store.Attempt) {
	if len(attempts) == 0 {
		return
	}
	if err := s.persist(ctx, "hand back", func(ctx context.Context) error {
		n, err := s.store.UnclaimJobs(ctx, attempts)
		if err == nil {
			s.handedBack.Add(int64(n))
		}
		return err
	}); err != nil {
		s.log.Error("handing jobs back failed; the stale sweep will recover them", "jobs", len(attempts), "err", err)
	}
}

// persist runs a state write, retrying through lost connections with
// backoff. It returns nil once the write is done, or the error it gave up
// on: one a retry cannot fix (the server refused the write itself), or any
// error once the process is shutting down for good. Either way the row
// stays processing and the stale sweep recovers it unless the caller does
// better.
//
// ctx is the caller's: an ended attempt's, the completer's, Stop's. Each
// try gets its values, not its end: the attempt's context is cancelled once
// it ends, and a forced stop cancels the rest, yet their outcome must still
// be written; each try is bounded by writeTimeout instead.
func (s *stateWriter) persist(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	delay := 50 * time.Millisecond
	deadline := time.Now().Add(s.grace + time.Minute)
	for {
		try, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		err := fn(try)
		cancel()
		if err == nil {
			return nil
		}
		if !retryableWrite(err) {
			return err
		}
		if s.stopping() && time.Now().After(deadline) {
			s.log.Error("giving up writing job state while stopping; the stale sweep will recover it", "what", what, "err", err)
			return err
		}
		s.log.Warn("writing job state failed; retrying", "what", what, "err", err, "in", delay)
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

// writeFailure writes a failed attempt's retry or burial.
func (s *stateWriter) writeFailure(ctx context.Context, f store.Failure) (applied bool, err error) {
	err = s.persist(ctx, "fail", func(ctx context.Context) error {
		var err error
		applied, err = s.store.FailJob(ctx, f)
		return err
	})
	return applied, err
}

// retryableRead reports whether a failed read may succeed when simply
// tried again: a lost connection, a deadlock or lock wait, a timeout.
func retryableRead(err error) bool {
	return store.ConnectionLost(err) || store.Transient(err) || errors.Is(err, context.DeadlineExceeded)
}
