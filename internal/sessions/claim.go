package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// ClaimTx is the claim transaction session-bound jobs are admitted into
// (store.ClaimTx): the reads and writes admission needs, by name, and the
// session statements bound to the same transaction, so a session created
// or renewed for a job commits or rolls back with that job's claim.
type ClaimTx interface {
	// SessionCandidates reads pending session-bound jobs of queues without
	// locking them, leaving out the sessions in skip.
	SessionCandidates(ctx context.Context, queues, skip []string, p store.ClaimParams) ([]store.JobRow, error)
	// LockJobs locks the candidates still claimable, by id.
	LockJobs(ctx context.Context, ids []int64) ([]store.JobRow, error)
	// Bury buries a locked row the claim will not run, with its log rows.
	Bury(ctx context.Context, workerID string, row *store.JobRow, message string) error
	// Sessions runs session statements inside the claim.
	Sessions() store.Sessions
}

// Claimant is who admits session-bound jobs: a worker of this process or
// an external worker polling over HTTP.
type Claimant struct {
	Namespace string
	WorkerID  string
	// Queues are every queue the worker is registered on.
	Queues []string
	// Caps are its capabilities.
	Caps map[string]bool
}

// Satisfies is the admission pre-filter: the session's queue must be one
// the worker is registered on, and its requirements a subset of the
// worker's capabilities.
func (c Claimant) Satisfies(n Normalized) bool {
	if n.Queue != nil && !slices.Contains(c.Queues, *n.Queue) {
		return false
	}
	for _, r := range n.Requirements {
		if !c.Caps[r] {
			return false
		}
	}
	return true
}

// ClaimParams asks ClaimJobs for up to N session-bound jobs of Queues.
type ClaimParams struct {
	Tx     ClaimTx
	Who    Claimant
	Queues []string
	// Claim is the claim's predicate (handlers, workflow steps); its Limit
	// is replaced by the candidate page size.
	Claim store.ClaimParams
	N     int
}

// ClaimResult is what one admission round took.
type ClaimResult struct {
	// Admitted are the locked jobs admitted through their sessions; the
	// caller writes them as processing in the same transaction.
	Admitted []store.JobRow
	// Seen counts the candidates read (0: there was nothing to admit).
	Seen int
	// Buried are the jobs the claim buried, already written.
	Buried []store.JobRow
}

// ClaimCandidates is how many pending session-bound jobs one claim reads
// before filtering them by what the worker can satisfy.
const ClaimCandidates = 64

// claimRounds bounds how many candidate pages one claim reads: each round
// skips the sessions the earlier ones found unusable.
const claimRounds = 4

// ClaimJobs admits up to p.N session-bound jobs of p.Queues into the claim
// p.Tx for p.Who. It reads pending candidates without locking, keeps those
// whose session options Who satisfies (queue routing first, then
// capabilities ⊇ requirements), locks them, and admits each through its
// session under the session's row lock. A refused job is left untouched:
// pending for a capable worker, and no session row is created for it; the
// rest of its session is skipped for this claim, so a held or unusable
// session does not hide the jobs behind it. A job that can never run is
// buried with the reason: its worker_session cannot be read, or its
// session is closed or past its TTL (terminal for that id). On an error
// the result still counts what was seen and buried.
func (r *Registry) ClaimJobs(ctx context.Context, p *ClaimParams) (ClaimResult, error) {
	var res ClaimResult
	tx, who, log := p.Tx, p.Who, r.log
	cp := p.Claim
	cp.Limit = max(ClaimCandidates, p.N)
	skip := map[string]bool{}    // sessions this claim cannot use
	inWindow := map[string]int{} // jobs admitted per session
	// Rows an earlier round locked are locked by this very transaction, so
	// a later round's SKIP LOCKED returns them again: never take one twice.
	taken := map[int64]bool{}
	workerLocked := false
	fail := func(err error) (ClaimResult, error) {
		res.Admitted = nil
		return res, err
	}
	for round := 0; round < claimRounds && len(res.Admitted) < p.N; round++ {
		cands, err := tx.SessionCandidates(ctx, p.Queues, slices.Collect(maps.Keys(skip)), cp)
		if err != nil {
			return fail(err)
		}
		res.Seen += len(cands)
		type pick struct {
			opts Options
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
			opts, err := JobOptions(&cands[i])
			if err != nil {
				picks[cands[i].ID] = pick{bad: err}
				ids = append(ids, cands[i].ID)
				continue
			}
			if !who.Satisfies(opts.Normalize()) {
				skip[sid] = true
				continue
			}
			picks[cands[i].ID] = pick{opts: opts, sid: sid}
			ids = append(ids, cands[i].ID)
		}
		locked, err := tx.LockJobs(ctx, ids)
		if err != nil {
			return fail(err)
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
				if err := tx.Bury(ctx, who.WorkerID, row, "Invalid worker_session: "+pk.bad.Error()); err != nil {
					return fail(err)
				}
				res.Buried = append(res.Buried, *row)
				continue
			}
			if len(res.Admitted) >= p.N || skip[pk.sid] {
				continue
			}
			if !workerLocked {
				if _, err := tx.Sessions().LockWorker(ctx, who.Namespace, who.WorkerID); err != nil {
					return fail(err)
				}
				workerLocked = true
			}
			ar, err := r.Admit(ctx, tx.Sessions(), Admission{
				Namespace: who.Namespace, WorkerID: who.WorkerID, Options: pk.opts, JobID: row.ID, InWindow: inWindow[pk.sid],
			})
			if err != nil {
				if store.Transient(err) || store.ConnectionLost(err) || ctx.Err() != nil {
					return fail(err)
				}
				// One session's trouble must not stop the claim: the job
				// stays pending and its session is skipped.
				log.Warn("admitting a session-bound job failed; skipping its session for now", "job", row.ID, "session", pk.sid, "err", err)
				skip[pk.sid] = true
				continue
			}
			if !ar.Admitted {
				skip[pk.sid] = true
				if terminalRefusal(ar.Reason) {
					msg := fmt.Sprintf("Worker session %q cannot be used: %s (%s)", pk.sid, ar.Error, ar.Reason)
					log.Warn("burying a job whose worker session is terminal", "job", row.ID, "session", pk.sid, "reason", ar.Reason)
					if err := tx.Bury(ctx, who.WorkerID, row, msg); err != nil {
						return fail(err)
					}
					res.Buried = append(res.Buried, *row)
					continue
				}
				log.Debug("session-bound job not admitted", "job", row.ID, "session", pk.sid, "worker", who.WorkerID, "reason", ar.Reason)
				continue
			}
			inWindow[pk.sid]++
			res.Admitted = append(res.Admitted, *row)
		}
		if len(cands) < cp.Limit || fresh == 0 {
			break // no further page, or nothing new in this one
		}
	}
	return res, nil
}

// terminalRefusal reports whether a refusal means the session id can never
// be used again (closed, or past its TTL / not reacquirable): its jobs
// would wait forever.
func terminalRefusal(reason string) bool {
	return reason == ReasonSessionClosed || reason == ReasonReacquireDisallowed
}

// JobOptions reads a job's worker_session column, falling back to the bare
// session id when only session_id was written.
func JobOptions(row *store.JobRow) (Options, error) {
	if !row.WorkerSession.Valid || row.WorkerSession.String == "" {
		if row.SessionID.String == "" {
			return Options{}, errors.New("session_id is empty")
		}
		return Options{SessionID: row.SessionID.String}, nil
	}
	v, err := phpjson.Decode([]byte(row.WorkerSession.String))
	if err != nil {
		return Options{}, fmt.Errorf("not JSON: %w", err)
	}
	// Stored snapshots are read leniently (spec §1.3): a bad number falls
	// back to its default; only a missing session id is an error.
	o, err := ParseStored(v)
	if err != nil {
		return Options{}, err
	}
	if o.SessionID != row.SessionID.String {
		return Options{}, fmt.Errorf("session_id column %q differs from worker_session.session_id %q", row.SessionID.String, o.SessionID)
	}
	return o, nil
}
