package queuety

import (
	"context"
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
)

// ErrSessionLost cancels a running session-bound job whose session lease
// could not be renewed (expired, closed, taken over): the handler should
// stop, since another worker may now hold the session's resource.
var ErrSessionLost = errors.New("worker session lost")

// claim admits the session-bound jobs this worker can take into the claim
// (see sessions.Registry.ClaimJobs). A claim that finds no candidates makes
// the next ones skip the read for a poll interval.
func (a *sessionAgent) claim(ctx context.Context, tx *store.ClaimTx, queues []string, p store.ClaimParams, n int) ([]store.JobRow, error) {
	if n <= 0 || len(queues) == 0 || a.MaxWorkerSessions < 0 {
		return nil, nil
	}
	a.mu.Lock()
	skip := time.Since(a.noneAt) < a.PollInterval
	a.mu.Unlock()
	if skip {
		return nil, nil
	}
	res, err := a.Client.sessions.ClaimJobs(ctx, &sessions.ClaimParams{
		Tx:     tx,
		Who:    sessions.Claimant{Namespace: a.Namespace, WorkerID: a.WorkerID, Queues: a.Queues, Caps: a.caps},
		Queues: queues,
		Claim:  p,
		N:      n,
	})
	rows, buried := res.Admitted, res.Buried
	if err == nil && res.Seen == 0 {
		a.mu.Lock()
		a.noneAt = time.Now()
		a.mu.Unlock()
	}
	// The claim buried these itself: count them like any burial.
	a.Buried(buried)
	return rows, err
}

// sessionLease is the lease a running session-bound job's session is
// renewed within (zero for a job without a session).
func sessionLease(row *store.JobRow) time.Duration {
	if !row.SessionID.Valid {
		return 0
	}
	o, err := sessions.JobOptions(row)
	if err != nil {
		return sessions.DefaultLeaseSeconds * time.Second
	}
	return time.Duration(o.Normalize().LeaseSeconds) * time.Second
}
