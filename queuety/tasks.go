package queuety

import (
	"context"
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// Tasks runs jobs for external workers (the HTTP worker plane): they poll
// a job, heartbeat it, and complete or fail it. Claims go through the same
// claim transaction as in-process workers, session admission included, and every
// transition is fenced on the attempt (reserved_by + attempts), so a worker
// whose attempt was rescued or taken over changes nothing.
//
// External workers get plain jobs (session-bound or not); workflow steps
// stay with `queuety work --workflows`, whose engine settles them.
type Tasks struct {
	c   *Client
	reg *Registry // handler options; empty: payload runtime and defaults
}

// Tasks returns the external-worker task runtime.
func (c *Client) Tasks() *Tasks { return &Tasks{c: c, reg: NewRegistry()} }

// ErrStaleAttempt is a heartbeat, completion or failure from an attempt
// that no longer holds its job (rescued, re-claimed, already settled).
var ErrStaleAttempt = errors.New("the attempt no longer holds the job")

// ClaimedTask is a job claimed for an external worker.
type ClaimedTask struct {
	Job            JobInfo   // as claimed; Attempts counts this attempt
	LeaseExpiresAt time.Time // when the stale sweep may take it back without a heartbeat
	Session        *sessions.Snapshot
}

// Poll claims one job of queues (default: the worker's registered queues)
// for a registered external worker: session-bound jobs it can satisfy
// first (unless withSessions is false: a client below the sessions
// protocol must never get one), then plain ones in queue order. Nil means
// nothing to do.
func (t *Tasks) Poll(ctx context.Context, ns, workerID string, queues []string, withSessions bool) (*ClaimedTask, error) {
	reg := t.c.sessions
	w, err := reg.Worker(ctx, ns, workerID)
	if err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		queues = w.Queues
	}
	paused, err := t.c.store.PausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	open := openQueues(queues, pausedSet(paused))
	// A long poll asks again every poll interval while nothing is due:
	// the plain look, not the claim's transaction, answers those (as an
	// idle lane's, claim.go).
	if due, err := t.c.store.AnyDue(ctx, open); err != nil || !due {
		return nil, err
	}
	caps := map[string]bool{}
	for _, c := range w.Capabilities {
		caps[c] = true
	}
	// The worker's claim window (claim.go), for one job and without the
	// worker's concurrency-group, rate and budget admission.
	rows, err := claimWindow(ctx, t.c.store, workerID, t.c.log, func(ctx context.Context, tx *store.ClaimTx) ([]store.JobRow, []store.LogRow, error) {
		var rows []store.JobRow
		var err error
		if withSessions {
			var res sessions.ClaimResult
			res, err = t.c.sessions.ClaimJobs(ctx, &sessions.ClaimParams{
				Tx:     tx,
				Who:    sessions.Claimant{Namespace: ns, WorkerID: workerID, Queues: w.Queues, Caps: caps},
				Queues: open,
				N:      1,
			})
			rows = res.Admitted
		}
		for i := 0; err == nil && len(rows) == 0 && i < len(open); i++ {
			rows, err = tx.Select(ctx, store.ClaimParams{Queue: open[i], Limit: 1})
		}
		if err != nil || len(rows) == 0 {
			return nil, nil, err
		}
		return rows[:1], []store.LogRow{startedLog(&rows[0])}, nil
	}, func() bool { return true })
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	row := rows[0]
	row.Attempts = claimedAttempt(&row)
	task := &ClaimedTask{Job: rowview.Job(&row), LeaseExpiresAt: t.c.store.Now().Add(t.c.cfg.StaleTimeout)}
	if row.SessionID.Valid {
		// The claim is committed: a failed read only leaves the session
		// out of the answer, never strands the job.
		if s, err := reg.Get(ctx, ns, row.SessionID.String); err != nil {
			t.c.log.Warn("polled a session-bound job but could not read its session", "job", row.ID, "err", err)
		} else {
			task.Session = &s
		}
	}
	return task, nil
}

// TaskHeartbeat is the outcome of an external worker's heartbeat.
type TaskHeartbeat struct {
	Recorded       bool
	LeaseExpiresAt time.Time
	Session        *sessions.Snapshot
	// Renewal is the refused session renewal when the job's session could
	// not be renewed: the worker must stop.
	Renewal *sessions.Result
}

// Heartbeat renews the attempt (reserved_at, and progress when given) and,
// for a session-bound job, first the session's lease: once the attempt is
// known to hold the job, the session is renewed, and the heartbeat is
// recorded only when that succeeds. A stale attempt returns
// ErrStaleAttempt.
func (t *Tasks) Heartbeat(ctx context.Context, ns, workerID string, jobID int64, attempt int, progress []byte) (TaskHeartbeat, error) {
	job, err := t.c.store.GetJob(ctx, jobID)
	if err != nil {
		return TaskHeartbeat{}, err
	}
	at := store.Attempt{ID: jobID, Attempt: attempt, WorkerID: workerID}
	var out TaskHeartbeat
	if job.SessionID.Valid {
		// Spec order: the attempt must hold the job (the row just read
		// says), then the session is renewed, and only then is the
		// heartbeat recorded.
		if !job.HeldBy(at) {
			return out, ErrStaleAttempt
		}
		res, err := t.c.sessions.HeartbeatSession(ctx, ns, job.SessionID.String, workerID, nil)
		if err != nil {
			return out, err
		}
		out.Session = res.Session
		if !res.Admitted {
			out.Renewal = &res
			return out, nil
		}
	}
	ok, err := t.c.store.Heartbeat(ctx, at, progress)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, ErrStaleAttempt
	}
	out.Recorded, out.LeaseExpiresAt = true, t.c.store.Now().Add(t.c.cfg.StaleTimeout)
	return out, nil
}

// Complete marks the attempt's job completed with Queuety's `completed`
// log row (its duration counted from the claim); ErrStaleAttempt when the
// attempt no longer holds it.
func (t *Tasks) Complete(ctx context.Context, workerID string, jobID int64, attempt int) error {
	job, err := t.c.store.GetJob(ctx, jobID)
	if err != nil {
		return err
	}
	l := store.LogFor(job, store.EventCompleted)
	l.Attempt = store.Int(int64(attempt))
	if job.ReservedAt.Valid {
		l.DurationMS = store.Int(max(0, t.c.store.Now().Sub(job.ReservedAt.Time).Milliseconds()))
	}
	res, err := t.c.store.CompleteJobs(ctx, []store.Completion{{
		Attempt: store.Attempt{ID: jobID, Attempt: attempt, WorkerID: workerID}, Log: l,
	}})
	if err != nil {
		return err
	}
	if len(res.Completed)+len(res.Already) == 0 {
		return ErrStaleAttempt
	}
	return nil
}

// TaskFailure is an external attempt's failure.
type TaskFailure struct {
	WorkerID      string
	JobID         int64
	Attempt       int
	Message       string
	ExceptionType string // the error class for the log row
	NonRetryable  bool   // bury now, whatever attempts remain
}

// Fail retries the job after its backoff while attempts remain (its
// payload's runtime settings, else the defaults; retryOrBury), else buries it, with
// Queuety's log rows. It reports whether the job was buried;
// ErrStaleAttempt when the attempt no longer holds it.
func (t *Tasks) Fail(ctx context.Context, f TaskFailure) (buried bool, err error) {
	job, err := t.c.store.GetJob(ctx, f.JobID)
	if err != nil {
		return false, err
	}
	payload, perr := phpjson.DecodeString(job.Payload)
	if perr != nil {
		payload = phpjson.Null()
	}
	var cause error
	if f.NonRetryable {
		cause = errNonRetryable
	}
	bury, delay := t.c.settingsFor(t.reg, job, payload).retryOrBury(f.Attempt, cause)
	job.Attempts = f.Attempt
	failed := store.LogFor(job, store.EventFailed)
	failed.Attempt = store.Int(int64(f.Attempt))
	failed.ErrorMessage = store.String(f.Message)
	if f.ExceptionType != "" {
		failed.ErrorClass = store.String(store.FitChars(f.ExceptionType, 255))
	}
	fl := failureWrite(job, store.Attempt{ID: f.JobID, Attempt: f.Attempt, WorkerID: f.WorkerID}, bury, delay, failed)
	applied, err := t.c.store.FailJob(ctx, fl)
	if err != nil {
		return false, err
	}
	if !applied {
		return false, ErrStaleAttempt
	}
	return bury, nil
}
