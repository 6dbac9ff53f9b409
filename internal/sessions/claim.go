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
	c := &claim{r: r, p: p, skip: map[string]bool{}, inWindow: map[string]int{}, taken: map[int64]bool{}}
	cp := p.Claim
	cp.Limit = max(ClaimCandidates, p.N)
	for round := 0; round < claimRounds && len(c.res.Admitted) < p.N; round++ {
		cands, err := p.Tx.SessionCandidates(ctx, p.Queues, slices.Collect(maps.Keys(c.skip)), cp)
		if err != nil {
			return c.fail(err)
		}
		c.res.Seen += len(cands)
		picks, ids, fresh := c.pick(cands)
		locked, err := p.Tx.LockJobs(ctx, ids)
		if err != nil {
			return c.fail(err)
		}
		// Lock order: the worker's registration row (creating or
		// reacquiring a session locks it), then sessions by id, so two
		// claims of this worker cannot deadlock on them.
		slices.SortStableFunc(locked, func(x, y store.JobRow) int {
			return strings.Compare(x.SessionID.String, y.SessionID.String)
		})
		for i := range locked {
			if err := c.admit(ctx, &locked[i], picks[locked[i].ID]); err != nil {
				return c.fail(err)
			}
		}
		if len(cands) < cp.Limit || fresh == 0 {
			break // no further page, or nothing new in this one
		}
	}
	return c.res, nil
}

// claim is one ClaimJobs call's state across its rounds.
type claim struct {
	r   *Registry
	p   *ClaimParams
	res ClaimResult
	// skip are the sessions this claim cannot use.
	skip map[string]bool
	// inWindow counts the jobs admitted per session.
	inWindow map[string]int
	// taken: rows an earlier round locked are locked by this very
	// transaction, so a later round's SKIP LOCKED returns them again:
	// never take one twice.
	taken        map[int64]bool
	workerLocked bool
}

// pick is a candidate kept for locking: its session's options, or why
// they cannot be read.
type pick struct {
	opts Options
	sid  string
	bad  error
}

func (c *claim) fail(err error) (ClaimResult, error) {
	c.res.Admitted = nil
	return c.res, err
}

// pick keeps the candidates not taken yet whose session the claimant
// satisfies, and those whose options cannot be read (to bury them);
// fresh counts the candidates not seen by an earlier round.
func (c *claim) pick(cands []store.JobRow) (picks map[int64]pick, ids []int64, fresh int) {
	picks = map[int64]pick{}
	for i := range cands {
		sid := cands[i].SessionID.String
		if c.skip[sid] || c.taken[cands[i].ID] {
			continue
		}
		c.taken[cands[i].ID] = true
		fresh++
		opts, err := JobOptions(&cands[i])
		if err != nil {
			picks[cands[i].ID] = pick{bad: err}
			ids = append(ids, cands[i].ID)
			continue
		}
		if !c.p.Who.Satisfies(opts.Normalize()) {
			c.skip[sid] = true
			continue
		}
		picks[cands[i].ID] = pick{opts: opts, sid: sid}
		ids = append(ids, cands[i].ID)
	}
	return picks, ids, fresh
}

// admit decides one locked candidate: buried (unreadable options, or a
// terminal session), admitted through its session, or left pending with
// its session skipped. An error stops the claim.
func (c *claim) admit(ctx context.Context, row *store.JobRow, pk pick) error {
	tx, who, log := c.p.Tx, c.p.Who, c.r.log
	if pk.bad != nil {
		log.Warn("burying a job whose worker_session cannot be read", "job", row.ID, "err", pk.bad)
		return c.bury(ctx, row, "Invalid worker_session: "+pk.bad.Error())
	}
	if len(c.res.Admitted) >= c.p.N || c.skip[pk.sid] {
		return nil
	}
	if !c.workerLocked {
		if _, err := tx.Sessions().LockWorker(ctx, who.Namespace, who.WorkerID); err != nil {
			return err
		}
		c.workerLocked = true
	}
	ar, err := c.r.Admit(ctx, tx.Sessions(), Admission{
		Namespace: who.Namespace, WorkerID: who.WorkerID, Options: pk.opts, JobID: row.ID, InWindow: c.inWindow[pk.sid],
	})
	if err != nil {
		if store.Transient(err) || store.ConnectionLost(err) || ctx.Err() != nil {
			return err
		}
		// One session's trouble must not stop the claim: the job stays
		// pending and its session is skipped.
		log.Warn("admitting a session-bound job failed; skipping its session for now", "job", row.ID, "session", pk.sid, "err", err)
		c.skip[pk.sid] = true
		return nil
	}
	if !ar.Admitted {
		c.skip[pk.sid] = true
		if terminalRefusal(ar.Reason) {
			log.Warn("burying a job whose worker session is terminal", "job", row.ID, "session", pk.sid, "reason", ar.Reason)
			return c.bury(ctx, row, fmt.Sprintf("Worker session %q cannot be used: %s (%s)", pk.sid, ar.Error, ar.Reason))
		}
		log.Debug("session-bound job not admitted", "job", row.ID, "session", pk.sid, "worker", who.WorkerID, "reason", ar.Reason)
		return nil
	}
	c.inWindow[pk.sid]++
	c.res.Admitted = append(c.res.Admitted, *row)
	return nil
}

// bury buries a locked candidate in the claim, with message.
func (c *claim) bury(ctx context.Context, row *store.JobRow, message string) error {
	if err := c.p.Tx.Bury(ctx, c.p.Who.WorkerID, row, message); err != nil {
		return err
	}
	c.res.Buried = append(c.res.Buried, *row)
	return nil
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
