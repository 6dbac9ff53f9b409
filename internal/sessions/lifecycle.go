package sessions

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"

	store "github.com/queuety-go/queuety/sql"
)

// HeartbeatSession renews a session's lease for its holder (spec §1.8):
// 404 session_not_found; 409 session_not_active when, after the refresh,
// it is not active (a heartbeat never revives a session); 409
// session_owner_mismatch for anyone but the holder. The lease runs
// max(1, leaseSeconds or the stored lease_seconds) from now; the override
// is not stored and the TTL never moves.
func (r *Registry) HeartbeatSession(ctx context.Context, ns, sessionID, workerID string, leaseSeconds *int) (Result, error) {
	return r.onLocked(ctx, ns, sessionID, workerID, func(tx store.Sessions, row *store.SessionRow) (Result, error) {
		if row.Status != StatusActive {
			return r.refuseWith(ctx, tx, *row, ReasonSessionNotActive, fmt.Sprintf(
				"Worker session [%s] is %s and cannot be renewed; admit it again (create) to reacquire it.", row.SessionID, row.Status))
		}
		if row.LeaseOwner.String != workerID {
			return r.ownerMismatch(ctx, tx, *row, workerID)
		}
		lease := row.LeaseSeconds
		if leaseSeconds != nil {
			lease = *leaseSeconds
		}
		now := r.now()
		renewLease(row, lease, now)
		row.FailureReason = sql.NullString{}
		if err := tx.UpdateSession(ctx, *row); err != nil {
			return Result{}, err
		}
		return r.done(ctx, tx, *row, OutcomeHeartbeatRecorded)
	})
}

// Close ends a session for its holder (spec §1.11): 404
// session_not_found; 200 already_closed when the holder closes it again;
// 409 session_owner_mismatch for anyone else; otherwise, whatever the
// status, it becomes closed, which is terminal for the session id.
func (r *Registry) Close(ctx context.Context, ns, sessionID, workerID string) (Result, error) {
	return r.onLocked(ctx, ns, sessionID, workerID, func(tx store.Sessions, row *store.SessionRow) (Result, error) {
		if row.Status == StatusClosed && row.LeaseOwner.String == workerID {
			return r.done(ctx, tx, *row, OutcomeAlreadyClosed)
		}
		if row.LeaseOwner.String != workerID {
			return r.ownerMismatch(ctx, tx, *row, workerID)
		}
		now := r.now()
		row.Status = StatusClosed
		row.ClosedAt = sql.NullTime{Time: now, Valid: true}
		row.FailureReason = sql.NullString{}
		row.UpdatedAt = now
		if err := tx.UpdateSession(ctx, *row); err != nil {
			return Result{}, err
		}
		r.log.Info("worker session closed", "namespace", row.Namespace, "session_id", row.SessionID, "worker_id", workerID)
		return r.done(ctx, tx, *row, OutcomeClosed)
	})
}

// CloseHeldBy closes every session the worker holds that is not closed yet
// (a planned shutdown, spec §1.11) and returns how many it closed.
func (r *Registry) CloseHeldBy(ctx context.Context, ns, workerID string) (int, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return 0, err
	}
	if err := ValidateWorkerID(workerID); err != nil {
		return 0, err
	}
	ids, err := r.st.Sessions().HeldSessionIDs(ctx, ns, workerID)
	if err != nil {
		return 0, err
	}
	closed := 0
	for _, id := range ids {
		res, err := r.Close(ctx, ns, id, workerID)
		if err != nil {
			return closed, err
		}
		if res.Outcome == OutcomeClosed {
			closed++
		}
	}
	return closed, nil
}

// onLocked runs fn on the locked, refreshed session row in one
// transaction; a missing row is 404 session_not_found.
func (r *Registry) onLocked(ctx context.Context, ns, sessionID, workerID string, fn func(store.Sessions, *store.SessionRow) (Result, error)) (Result, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateWorkerID(workerID); err != nil {
		return Result{}, err
	}
	var res Result
	err = r.st.SessionTx(ctx, func(tx store.Sessions) error {
		row, err := tx.LockSession(ctx, ns, sessionID)
		if err != nil {
			return err
		}
		if row == nil {
			res = refuse(ReasonSessionNotFound, fmt.Sprintf("Worker session [%s] not found in namespace [%s].", sessionID, ns))
			return nil
		}
		if err := r.refresh(ctx, tx, row, r.now(), nil); err != nil {
			return err
		}
		res, err = fn(tx, row)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("worker session %s: %w", sessionID, err)
	}
	return res, nil
}

func (r *Registry) ownerMismatch(ctx context.Context, q store.Sessions, row store.SessionRow, workerID string) (Result, error) {
	return r.refuseWith(ctx, q, row, ReasonSessionOwnerMismatch, fmt.Sprintf(
		"Worker session [%s] is held by worker [%s], not [%s].", row.SessionID, row.LeaseOwner.String, workerID))
}

func (r *Registry) done(ctx context.Context, q store.Sessions, row store.SessionRow, outcome string) (Result, error) {
	snap, err := r.snapshot(ctx, q, row, nil)
	if err != nil {
		return Result{}, err
	}
	return Result{Admitted: true, Status: http.StatusOK, Outcome: outcome, Session: &snap}, nil
}

// List is the operator view: every active session is refreshed first,
// then all are read, newest change first, then by session id.
func (r *Registry) List(ctx context.Context, ns string) (Visibility, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Visibility{}, err
	}
	if err := r.refreshActive(ctx, ns); err != nil {
		return Visibility{}, err
	}
	db := r.st.Sessions()
	rows, err := db.ListSessions(ctx, ns)
	if err != nil {
		return Visibility{}, err
	}
	v := Visibility{Namespace: ns, Sessions: make([]Snapshot, 0, len(rows))}
	holders := map[string]*store.WorkerRow{}
	for _, row := range rows {
		var w *store.WorkerRow
		if row.LeaseOwner.Valid {
			cached, ok := holders[row.LeaseOwner.String]
			if !ok {
				if cached, err = db.GetWorker(ctx, ns, row.LeaseOwner.String); err != nil {
					return Visibility{}, err
				}
				holders[row.LeaseOwner.String] = cached
			}
			w = cached
		}
		snap, err := r.snapshotWith(ctx, db, row, w)
		if err != nil {
			return Visibility{}, err
		}
		v.Metrics.add(row.Status, 1)
		v.Sessions = append(v.Sessions, snap)
	}
	return v, nil
}

// Metrics counts a namespace's sessions by status after refreshing the
// active ones (operator metrics).
func (r *Registry) Metrics(ctx context.Context, ns string) (Metrics, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Metrics{}, err
	}
	if err := r.refreshActive(ctx, ns); err != nil {
		return Metrics{}, err
	}
	counts, err := r.st.Sessions().SessionMetrics(ctx, ns)
	if err != nil {
		return Metrics{}, err
	}
	var m Metrics
	for status, n := range counts {
		m.add(status, n)
	}
	return m, nil
}

// Get refreshes and reads one session; ErrSessionNotFound when there is
// none.
func (r *Registry) Get(ctx context.Context, ns, sessionID string) (Snapshot, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Snapshot{}, err
	}
	var snap *Snapshot
	err = r.st.SessionTx(ctx, func(tx store.Sessions) error {
		snap = nil
		row, err := tx.LockSession(ctx, ns, sessionID)
		if err != nil || row == nil {
			return err
		}
		if err := r.refresh(ctx, tx, row, r.now(), nil); err != nil {
			return err
		}
		s, err := r.snapshot(ctx, tx, *row, nil)
		snap = &s
		return err
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("worker session %s: %w", sessionID, err)
	}
	if snap == nil {
		return Snapshot{}, fmt.Errorf("%w: worker session [%s] not found in namespace [%s]", ErrSessionNotFound, sessionID, ns)
	}
	return *snap, nil
}

// refreshActive applies the lazy refresh to every active session, each
// under its own row lock (there is no sweeper).
func (r *Registry) refreshActive(ctx context.Context, ns string) error {
	ids, err := r.st.Sessions().ActiveSessionIDs(ctx, ns)
	if err != nil {
		return err
	}
	for _, id := range ids {
		err := r.st.SessionTx(ctx, func(tx store.Sessions) error {
			row, err := tx.LockSession(ctx, ns, id)
			if err != nil || row == nil {
				return err
			}
			return r.refresh(ctx, tx, row, r.now(), nil)
		})
		if err != nil {
			return fmt.Errorf("refresh worker session %s: %w", id, err)
		}
	}
	return nil
}

// snapshot builds a session's snapshot; holder is its lease owner's
// registration, read when nil.
func (r *Registry) snapshot(ctx context.Context, q store.Sessions, row store.SessionRow, holder *store.WorkerRow) (Snapshot, error) {
	if row.LeaseOwner.Valid && (holder == nil || holder.WorkerID != row.LeaseOwner.String) {
		w, err := q.GetWorker(ctx, row.Namespace, row.LeaseOwner.String)
		if err != nil {
			return Snapshot{}, err
		}
		holder = w
	}
	return r.snapshotWith(ctx, q, row, holder)
}

// snapshotWith builds a snapshot with the holder's registration as given
// (nil: none).
func (r *Registry) snapshotWith(ctx context.Context, q store.Sessions, row store.SessionRow, w *store.WorkerRow) (Snapshot, error) {
	s := Snapshot{
		SessionID:                  row.SessionID,
		Namespace:                  row.Namespace,
		Connection:                 strPtr(row.Connection),
		Queue:                      strPtr(row.Queue),
		Requirements:               nonNil(slices.Clone([]string(row.Requirements))),
		Status:                     row.Status,
		LeaseOwner:                 strPtr(row.LeaseOwner),
		LeaseExpiresAt:             timePtr(row.LeaseExpiresAt),
		TTLExpiresAt:               timePtr(row.TTLExpiresAt),
		ClosedAt:                   timePtr(row.ClosedAt),
		FailureReason:              strPtr(row.FailureReason),
		LeaseSeconds:               row.LeaseSeconds,
		TTLSeconds:                 row.TTLSeconds,
		MaxConcurrentActivities:    row.MaxConcurrentActivities,
		CreateIfMissing:            row.CreateIfMissing,
		AllowReacquireAfterFailure: row.AllowReacquireAfterFailure,
		LastHeartbeatAt:            timePtr(row.LastHeartbeatAt),
		CreatedAt:                  row.CreatedAt.UTC(),
		UpdatedAt:                  row.UpdatedAt.UTC(),
	}
	if !row.LeaseOwner.Valid {
		return s, nil
	}
	h := &Holder{WorkerID: row.LeaseOwner.String, IsStale: true}
	if w != nil && w.WorkerID == row.LeaseOwner.String {
		h.TaskQueue = &w.TaskQueue
		h.Status = &w.Status
		h.LastHeartbeatAt = timePtr(w.LastHeartbeatAt)
		h.IsStale = r.isStale(h.LastHeartbeatAt, r.now())
	}
	s.Holder = h
	n, err := q.CountSessionActivities(ctx, row.SessionID, row.LeaseOwner.String, 0)
	if err != nil {
		return Snapshot{}, err
	}
	s.ActiveActivityCount = n
	return s, nil
}

func strPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}
