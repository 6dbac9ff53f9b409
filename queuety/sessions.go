package queuety

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
)

// ErrSessionLost cancels a running session-bound job whose session lease
// could not be renewed (expired, closed, taken over): the handler should
// stop, since another worker may now hold the session's resource.
var ErrSessionLost = errors.New("worker session lost")

// sessionCandidates is how many pending session-bound jobs one claim
// reads before filtering them by what this worker can satisfy.
const sessionCandidates = 64

// claim admits the session-bound jobs this worker can take into the claim
// (see claimSessionJobs). A claim that finds no candidates makes the next
// ones skip the read for a poll interval.
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
	who := claimant{ns: a.Namespace, workerID: a.WorkerID, queues: a.Queues, caps: a.caps}
	rows, seen, buried, err := claimSessionJobs(ctx, tx, a.Client, who, queues, p, n)
	if err == nil && seen == 0 {
		a.mu.Lock()
		a.noneAt = time.Now()
		a.mu.Unlock()
	}
	// The claim buried these itself: count them like any burial.
	a.Buried(buried)
	return rows, err
}

// claimant is who admits session-bound jobs: a worker of this process or
// an external worker polling over HTTP.
type claimant struct {
	ns       string
	workerID string
	queues   []string        // every queue the worker is registered on
	caps     map[string]bool // its capabilities
}

// satisfies is the admission pre-filter: the session's queue must be one
// the worker is registered on, and its requirements a subset of the
// worker's capabilities.
func (c claimant) satisfies(n sessions.Normalized) bool {
	if n.Queue != nil && !slices.Contains(c.queues, *n.Queue) {
		return false
	}
	for _, r := range n.Requirements {
		if !c.caps[r] {
			return false
		}
	}
	return true
}

// sessionRounds bounds how many candidate pages one claim reads: each
// round skips the sessions the earlier ones found unusable.
const sessionRounds = 4

// claimSessionJobs admits up to n session-bound jobs of queues into the
// claim tx for who. It reads pending candidates without locking, keeps
// those whose session options who satisfies (queue routing first, then
// capabilities ⊇ requirements), locks them, and admits each through its
// session under the session's row lock. A refused job is left untouched:
// pending for a capable worker, and no session row is created for it; the
// rest of its session is skipped for this claim, so a held or unusable
// session does not hide the jobs behind it. A job that can never run is
// buried with the reason: its worker_session cannot be read, or its
// session is closed or past its TTL (terminal for that id). seen counts
// the candidates, buried the jobs buried.
func claimSessionJobs(ctx context.Context, tx *store.ClaimTx, c *Client, who claimant, queues []string,
	p store.ClaimParams, n int) (admitted []store.JobRow, seen int, buried []store.JobRow, err error) {
	reg, log := c.sessions, c.log
	p.Limit = max(sessionCandidates, n)
	skip := map[string]bool{}    // sessions this claim cannot use
	inWindow := map[string]int{} // jobs admitted per session
	// Rows an earlier round locked are locked by this very transaction, so
	// a later round's SKIP LOCKED returns them again: never take one twice.
	taken := map[int64]bool{}
	workerLocked := false
	for round := 0; round < sessionRounds && len(admitted) < n; round++ {
		cands, err := tx.SessionCandidates(ctx, queues, slices.Collect(maps.Keys(skip)), p)
		if err != nil {
			return nil, seen, buried, err
		}
		seen += len(cands)
		type pick struct {
			opts sessions.Options
			sid  string
			bad  error
		}
		picks := map[int64]pick{}
		var ids []int64
		fresh := 0
		for i := range cands {
			sid := cands[i].SessionID.String
			if skip[sid] || taken[cands[i].ID] {
				continue
			}
			taken[cands[i].ID] = true
			fresh++
			opts, err := jobSessionOptions(&cands[i])
			if err != nil {
				picks[cands[i].ID] = pick{bad: err}
				ids = append(ids, cands[i].ID)
				continue
			}
			if !who.satisfies(opts.Normalize()) {
				skip[sid] = true
				continue
			}
			picks[cands[i].ID] = pick{opts: opts, sid: sid}
			ids = append(ids, cands[i].ID)
		}
		locked, err := tx.LockJobs(ctx, ids)
		if err != nil {
			return nil, seen, buried, err
		}
		// Lock order: the worker's registration row (creating or
		// reacquiring a session locks it), then sessions by id, so two
		// claims of this worker cannot deadlock on them.
		slices.SortStableFunc(locked, func(x, y store.JobRow) int {
			return strings.Compare(x.SessionID.String, y.SessionID.String)
		})
		for i := range locked {
			row := &locked[i]
			pk := picks[row.ID]
			if pk.bad != nil {
				log.Warn("burying a job whose worker_session cannot be read", "job", row.ID, "err", pk.bad)
				if err := tx.Bury(ctx, who.workerID, row, "Invalid worker_session: "+pk.bad.Error()); err != nil {
					return nil, seen, buried, err
				}
				buried = append(buried, *row)
				continue
			}
			if len(admitted) >= n || skip[pk.sid] {
				continue
			}
			if !workerLocked {
				if _, err := c.store.LockWorker(ctx, tx.Querier(), who.ns, who.workerID); err != nil {
					return nil, seen, buried, err
				}
				workerLocked = true
			}
			res, err := reg.Admit(ctx, tx.Querier(), sessions.Admission{
				Namespace: who.ns, WorkerID: who.workerID, Options: pk.opts, JobID: row.ID, InWindow: inWindow[pk.sid],
			})
			if err != nil {
				if store.Transient(err) || store.ConnectionLost(err) || ctx.Err() != nil {
					return nil, seen, buried, err
				}
				// One session's trouble must not stop the claim: the job
				// stays pending and its session is skipped.
				log.Warn("admitting a session-bound job failed; skipping its session for now", "job", row.ID, "session", pk.sid, "err", err)
				skip[pk.sid] = true
				continue
			}
			if !res.Admitted {
				skip[pk.sid] = true
				if terminalRefusal(res.Reason) {
					msg := fmt.Sprintf("Worker session %q cannot be used: %s (%s)", pk.sid, res.Error, res.Reason)
					log.Warn("burying a job whose worker session is terminal", "job", row.ID, "session", pk.sid, "reason", res.Reason)
					if err := tx.Bury(ctx, who.workerID, row, msg); err != nil {
						return nil, seen, buried, err
					}
					buried = append(buried, *row)
					continue
				}
				log.Debug("session-bound job not admitted", "job", row.ID, "session", pk.sid, "worker", who.workerID, "reason", res.Reason)
				continue
			}
			inWindow[pk.sid]++
			admitted = append(admitted, *row)
		}
		if len(cands) < p.Limit || fresh == 0 {
			break // no further page, or nothing new in this one
		}
	}
	return admitted, seen, buried, nil
}

// terminalRefusal reports whether a refusal means the session id can never
// be used again (closed, or past its TTL / not reacquirable): its jobs
// would wait forever.
func terminalRefusal(reason string) bool {
	return reason == sessions.ReasonSessionClosed || reason == sessions.ReasonReacquireDisallowed
}

// sessionLease is the lease a running session-bound job's session is
// renewed within (zero for a job without a session).
func sessionLease(row *store.JobRow) time.Duration {
	if !row.SessionID.Valid {
		return 0
	}
	o, err := jobSessionOptions(row)
	if err != nil {
		return sessions.DefaultLeaseSeconds * time.Second
	}
	return time.Duration(o.Normalize().LeaseSeconds) * time.Second
}

// jobSessionOptions reads a job's worker_session column, falling back to
// the bare session id when only session_id was written.
func jobSessionOptions(row *store.JobRow) (sessions.Options, error) {
	if !row.WorkerSession.Valid || row.WorkerSession.String == "" {
		if row.SessionID.String == "" {
			return sessions.Options{}, errors.New("session_id is empty")
		}
		return sessions.Options{SessionID: row.SessionID.String}, nil
	}
	v, err := phpjson.Decode([]byte(row.WorkerSession.String))
	if err != nil {
		return sessions.Options{}, fmt.Errorf("not JSON: %w", err)
	}
	// Stored snapshots are read leniently (spec §1.3): a bad number falls
	// back to its default; only a missing session id is an error.
	o, err := sessions.ParseStored(v)
	if err != nil {
		return sessions.Options{}, err
	}
	if o.SessionID != row.SessionID.String {
		return sessions.Options{}, fmt.Errorf("session_id column %q differs from worker_session.session_id %q", row.SessionID.String, o.SessionID)
	}
	return o, nil
}
