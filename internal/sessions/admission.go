package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	store "github.com/queuety-go/queuety/sql"
)

// Admission asks for a job (an activity task) to run in a worker session.
type Admission struct {
	Namespace string
	WorkerID  string
	Options   Options
	JobID     int64
	// InWindow counts this session's jobs the caller already admitted in the
	// same transaction and has not yet written as processing: they count
	// against max_concurrent_activities like running ones.
	InWindow int
}

// Create is the explicit POST /api/worker/sessions: the worker must be
// registered (412 worker_not_registered); a queue it is not registered on
// is refused (409 session_queue_mismatch with registered_task_queue and
// requested_session_queue); an unset queue defaults to the worker's
// task_queue; then the admission of spec §1.6 in its own transaction.
func (r *Registry) Create(ctx context.Context, ns, workerID string, o Options) (Result, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateWorkerID(workerID); err != nil {
		return Result{}, err
	}
	n := o.Normalize()
	if res, bad := invalidSession(n); bad {
		return res, nil
	}
	var res Result
	err = r.st.SessionTx(ctx, func(tx store.Sessions) error {
		w, err := tx.GetWorker(ctx, ns, workerID)
		if err != nil {
			return err
		}
		if w == nil {
			res = notRegistered(ns, workerID)
			return nil
		}
		opts := n
		if opts.Queue == nil {
			q := w.TaskQueue
			opts.Queue = &q
		} else if !slices.Contains(workerQueues(w), *opts.Queue) {
			res = refuse(ReasonSessionQueueMismatch, fmt.Sprintf(
				"Worker session [%s] is routed to queue [%s], but worker [%s] is registered for task queue [%s].",
				opts.SessionID, *opts.Queue, workerID, w.TaskQueue))
			res.RegisteredTaskQueue, res.RequestedSessionQueue = w.TaskQueue, *opts.Queue
			return nil
		}
		res, err = r.acquire(ctx, tx, ns, w, opts, 0, 0)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("create worker session %s: %w", n.SessionID, err)
	}
	return res, nil
}

// Admit runs the admission of spec §1.6 for a job bound to a session,
// inside the caller's transaction q (it locks the session row and, when
// creating or reacquiring, the worker's registration; it never commits).
// A refusal changes nothing the caller must undo except a status refresh,
// which is correct either way. Like every locking statement it can fail
// with a deadlock or lock wait timeout (store.Transient): retry the whole
// transaction.
//
// Queue routing passes when the options name no queue or one of the
// worker's queues; the worker must be registered.
func (r *Registry) Admit(ctx context.Context, q store.Sessions, a Admission) (Result, error) {
	ns, err := namespaceOf(a.Namespace)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateWorkerID(a.WorkerID); err != nil {
		return Result{}, err
	}
	n := a.Options.Normalize()
	if res, bad := invalidSession(n); bad {
		return res, nil
	}
	w, err := q.GetWorker(ctx, ns, a.WorkerID)
	if err != nil {
		return Result{}, err
	}
	if w == nil {
		return notRegistered(ns, a.WorkerID), nil
	}
	jobID := a.JobID
	if jobID == 0 {
		jobID = -1 // an admission for a job, even one the caller numbers 0
	}
	return r.acquire(ctx, q, ns, w, n, jobID, a.InWindow)
}

// acquire is acquireLocked (spec §1.6). jobID is 0 for an explicit
// create, else the job being admitted (-1 for a job without an id).
func (r *Registry) acquire(ctx context.Context, q store.Sessions, ns string, w *store.WorkerRow, o Normalized, jobID int64, inWindow int) (Result, error) {
	now := r.now()
	// 1. Queue routing first.
	if o.Queue != nil && !slices.Contains(workerQueues(w), *o.Queue) {
		return refuse(ReasonSessionQueueMismatch, fmt.Sprintf(
			"Worker session [%s] is routed to queue [%s], which worker [%s] does not serve (%s).",
			o.SessionID, *o.Queue, w.WorkerID, strings.Join(workerQueues(w), ", "))), nil
	}
	// 2. Capabilities.
	var missing []string
	for _, req := range o.Requirements {
		if !slices.Contains(w.Capabilities, req) {
			missing = append(missing, req)
		}
	}
	if len(missing) > 0 {
		res := refuse(ReasonRequirementsNotMet, fmt.Sprintf(
			"Worker [%s] does not advertise the capabilities worker session [%s] requires: %s.",
			w.WorkerID, o.SessionID, strings.Join(missing, ", ")))
		res.MissingRequirements = missing
		return res, nil
	}
	// Two creators of a new session both find no row (nothing to lock);
	// the loser's insert fails on the unique key once the winner commits,
	// and it decides again on the winner's row.
	for try := 0; ; try++ {
		// 3. Lock and refresh.
		row, err := q.LockSession(ctx, ns, o.SessionID)
		if err != nil {
			return Result{}, err
		}
		if row == nil {
			res, err := r.create(ctx, q, ns, w, o, jobID, now)
			if errors.Is(err, store.ErrSessionExists) && try < 3 {
				continue
			}
			return res, err
		}
		if err := r.refresh(ctx, q, row, now, w); err != nil {
			return Result{}, err
		}
		return r.acquireExisting(ctx, q, w, o, jobID, inWindow, row, now)
	}
}

// create is step 4: a missing session.
func (r *Registry) create(ctx context.Context, q store.Sessions, ns string, w *store.WorkerRow, o Normalized, jobID int64, now time.Time) (Result, error) {
	if !o.CreateIfMissing {
		return refuse(ReasonSessionMissing, fmt.Sprintf(
			"Worker session [%s] does not exist and its options set create_if_missing to false.", o.SessionID)), nil
	}
	if res, ok, err := r.checkWorkerLimit(ctx, q, w, "", now); err != nil || !ok {
		return res, err
	}
	row := &store.SessionRow{
		Namespace: ns, SessionID: o.SessionID, Status: StatusActive,
		LeaseOwner:   sql.NullString{String: w.WorkerID, Valid: true},
		TTLExpiresAt: sql.NullTime{Time: now.Add(seconds(o.TTLSeconds)), Valid: true},
		CreatedAt:    now,
	}
	applyOptions(row, o)
	renewLease(row, o.LeaseSeconds, now)
	if err := q.InsertSession(ctx, row); err != nil {
		return Result{}, err
	}
	r.log.Info("worker session created", "namespace", ns, "session_id", o.SessionID, "worker_id", w.WorkerID)
	return r.admitted(ctx, q, *row, w, OutcomeCreated, http.StatusCreated, jobID)
}

// acquireExisting is steps 5 to 9 on a locked, refreshed row.
func (r *Registry) acquireExisting(ctx context.Context, q store.Sessions, w *store.WorkerRow, o Normalized, jobID int64, inWindow int, row *store.SessionRow, now time.Time) (Result, error) {
	switch row.Status {
	case StatusActive:
		if row.LeaseOwner.String != w.WorkerID {
			return r.refuseWith(ctx, q, *row, ReasonOwnedByAnotherWorker, fmt.Sprintf(
				"Worker session [%s] is held by another worker.", row.SessionID))
		}
		if jobID != 0 {
			n, err := q.CountSessionActivities(ctx, row.SessionID, w.WorkerID, max(jobID, 0))
			if err != nil {
				return Result{}, err
			}
			// The limit is the admitted job's (its options are copied onto
			// the row when it is admitted).
			if n+inWindow >= o.MaxConcurrentActivities {
				res, err := r.refuseWith(ctx, q, *row, ReasonActivityLimitExceeded, fmt.Sprintf(
					"Worker session [%s] already runs %d of its %d concurrent activities.",
					row.SessionID, n+inWindow, o.MaxConcurrentActivities))
				limit := o.MaxConcurrentActivities
				res.MaxConcurrentActivities = &limit
				return res, err
			}
		}
		applyOptions(row, o)
		renewLease(row, o.LeaseSeconds, now)
		if err := q.UpdateSession(ctx, *row); err != nil {
			return Result{}, err
		}
		return r.admitted(ctx, q, *row, w, OutcomeReused, http.StatusOK, jobID)
	case StatusClosed:
		return r.refuseWith(ctx, q, *row, ReasonSessionClosed, fmt.Sprintf(
			"Worker session [%s] is closed and cannot be reacquired; use a new session id.", row.SessionID))
	}
	// expired, orphaned or failed. Refresh stops at the first failure, so a
	// session that lapsed on its lease (or its holder) before its TTL keeps
	// that reason after the TTL passes: check the TTL itself, and record it
	// so list, detail and metrics show the session as terminal.
	if row.TTLExpiresAt.Valid && !row.TTLExpiresAt.Time.After(now) && row.FailureReason.String != FailureTTLExpired {
		row.Status, row.FailureReason = StatusExpired, sql.NullString{String: FailureTTLExpired, Valid: true}
		row.UpdatedAt = now
		if err := q.UpdateSession(ctx, *row); err != nil {
			return Result{}, err
		}
		r.log.Info("worker session expired", "namespace", row.Namespace, "session_id", row.SessionID,
			"worker_id", row.LeaseOwner.String, "failure_reason", FailureTTLExpired)
	}
	if row.FailureReason.String == FailureTTLExpired || !row.AllowReacquireAfterFailure {
		return r.refuseWith(ctx, q, *row, ReasonReacquireDisallowed, fmt.Sprintf(
			"Worker session [%s] is terminal and cannot be reacquired; use a new session id.", row.SessionID))
	}
	if !o.AllowReacquireAfterFailure {
		return r.refuseWith(ctx, q, *row, ReasonReacquireDisallowed, fmt.Sprintf(
			"Worker session options disallow reacquisition of worker session [%s] after failure.", row.SessionID))
	}
	if res, ok, err := r.checkWorkerLimit(ctx, q, w, row.SessionID, now); err != nil || !ok {
		return res, err
	}
	previous := row.LeaseOwner.String
	row.Status = StatusActive
	row.LeaseOwner = sql.NullString{String: w.WorkerID, Valid: true}
	row.ClosedAt = sql.NullTime{}
	row.FailureReason = sql.NullString{}
	applyOptions(row, o) // ttl_expires_at stays: the TTL is absolute (⚠3)
	renewLease(row, o.LeaseSeconds, now)
	if err := q.UpdateSession(ctx, *row); err != nil {
		return Result{}, err
	}
	r.log.Info("worker session reacquired", "namespace", row.Namespace, "session_id", row.SessionID,
		"worker_id", w.WorkerID, "previous_owner", previous)
	return r.admitted(ctx, q, *row, w, OutcomeReacquired, http.StatusOK, jobID)
}

// checkWorkerLimit is step 8, under the worker's registration lock so two
// of its transactions cannot both take the last slot.
func (r *Registry) checkWorkerLimit(ctx context.Context, q store.Sessions, w *store.WorkerRow, except string, now time.Time) (Result, bool, error) {
	locked, err := q.LockWorker(ctx, w.Namespace, w.WorkerID)
	if err != nil {
		return Result{}, false, err
	}
	if locked == nil { // deregistered since the caller read it
		return notRegistered(w.Namespace, w.WorkerID), false, nil
	}
	limit := int(locked.MaxConcurrentWorkerSessions.Int64)
	if !locked.MaxConcurrentWorkerSessions.Valid || limit <= 0 {
		return refuse(ReasonWorkerSessionLimitExceeded, "Worker is not configured to hold worker-session leases."), false, nil
	}
	n, err := q.CountWorkerLeasedSessions(ctx, w.Namespace, w.WorkerID, now, except)
	if err != nil {
		return Result{}, false, err
	}
	if n >= limit {
		res := refuse(ReasonWorkerSessionLimitExceeded, fmt.Sprintf(
			"Worker [%s] already holds %d of its %d worker sessions.", w.WorkerID, n, limit))
		res.MaxConcurrentWorkerSessions = &limit
		return res, false, nil
	}
	return Result{}, true, nil
}

// refresh applies spec §1.5 to a locked row, in order, only while it is
// active, and writes the change. known is a registration the caller has
// already read (nil: none), reused when it is the holder's.
func (r *Registry) refresh(ctx context.Context, q store.Sessions, row *store.SessionRow, now time.Time, known *store.WorkerRow) error {
	if row.Status != StatusActive {
		return nil
	}
	switch {
	case row.TTLExpiresAt.Valid && !row.TTLExpiresAt.Time.After(now):
		row.Status, row.FailureReason = StatusExpired, sql.NullString{String: FailureTTLExpired, Valid: true}
	case row.LeaseExpiresAt.Valid && !row.LeaseExpiresAt.Time.After(now):
		row.Status, row.FailureReason = StatusExpired, sql.NullString{String: FailureLeaseExpired, Valid: true}
	default:
		stale, err := r.holderStale(ctx, q, *row, now, known)
		if err != nil || !stale {
			return err
		}
		row.Status, row.FailureReason = StatusOrphaned, sql.NullString{String: FailureWorkerHeartbeatStale, Valid: true}
	}
	row.UpdatedAt = now
	r.log.Info("worker session "+row.Status, "namespace", row.Namespace, "session_id", row.SessionID,
		"worker_id", row.LeaseOwner.String, "failure_reason", row.FailureReason.String)
	return q.UpdateSession(ctx, *row)
}

// holderStale: the lease owner's registration is missing, never beat, or
// beat longer than StaleAfter ago.
func (r *Registry) holderStale(ctx context.Context, q store.Sessions, row store.SessionRow, now time.Time, known *store.WorkerRow) (bool, error) {
	if !row.LeaseOwner.Valid {
		return true, nil
	}
	w := known
	if w == nil || w.WorkerID != row.LeaseOwner.String {
		var err error
		if w, err = q.GetWorker(ctx, row.Namespace, row.LeaseOwner.String); err != nil || w == nil {
			return w == nil, err
		}
	}
	return r.isStale(timePtr(w.LastHeartbeatAt), now), nil
}

// applyOptions copies the incoming options onto the row (create, reuse,
// reacquire); never the TTL expiry.
func applyOptions(row *store.SessionRow, o Normalized) {
	row.Connection = optString(o.Connection)
	row.Queue = optString(o.Queue)
	row.Requirements = slices.Clone(o.Requirements)
	row.LeaseSeconds = o.LeaseSeconds
	row.TTLSeconds = o.TTLSeconds
	row.MaxConcurrentActivities = o.MaxConcurrentActivities
	row.CreateIfMissing = o.CreateIfMissing
	row.AllowReacquireAfterFailure = o.AllowReacquireAfterFailure
}

func renewLease(row *store.SessionRow, leaseSeconds int, now time.Time) {
	row.LeaseExpiresAt = sql.NullTime{Time: now.Add(seconds(max(1, leaseSeconds))), Valid: true}
	row.LastHeartbeatAt = sql.NullTime{Time: now, Valid: true}
	row.UpdatedAt = now
}

func (r *Registry) admitted(ctx context.Context, q store.Sessions, row store.SessionRow, w *store.WorkerRow, outcome string, status int, jobID int64) (Result, error) {
	snap, err := r.snapshot(ctx, q, row, w)
	if err != nil {
		return Result{}, err
	}
	res := Result{Admitted: true, Status: status, Outcome: outcome, Session: &snap}
	if jobID > 0 {
		id := strconv.FormatInt(jobID, 10)
		res.ActivityTaskID = &id
	}
	return res, nil
}

func refuse(reason, msg string) Result {
	return Result{Status: HTTPStatus(reason), Reason: reason, Error: msg}
}

// refuseWith is a refusal that shows the session as it stands.
func (r *Registry) refuseWith(ctx context.Context, q store.Sessions, row store.SessionRow, reason, msg string) (Result, error) {
	snap, err := r.snapshot(ctx, q, row, nil)
	if err != nil {
		return Result{}, err
	}
	res := refuse(reason, msg)
	res.Session = &snap
	return res, nil
}

func notRegistered(ns, workerID string) Result {
	res := refuse(ReasonWorkerNotRegistered, fmt.Sprintf(
		"Worker [%s] is not registered in namespace [%s]; register it (POST /api/worker/register) before using worker sessions.", workerID, ns))
	res.WorkerID = workerID
	return res
}

// invalidSession refuses a session id that is blank after trimming or
// longer than the column (422 invalid_worker_session).
func invalidSession(n Normalized) (Result, bool) {
	switch {
	case n.SessionID == "":
		return refuse(ReasonInvalidWorkerSession, "Worker session id must be a non-empty string."), true
	case utf8.RuneCountInString(n.SessionID) > 255:
		return refuse(ReasonInvalidWorkerSession, "Worker session id must be at most 255 characters."), true
	}
	return Result{}, false
}

func optString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
