package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SetWorkerClaims stores what a registered worker claims (a JSON object,
// workers.claims).
func (s *Store) SetWorkerClaims(ctx context.Context, namespace, workerID, claims string) error {
	if _, err := s.db.ExecContext(ctx, s.query(qFleetSetClaims), claims, namespace, workerID); err != nil {
		return fmt.Errorf("set worker claims: %w", err)
	}
	return nil
}

// LiveWorker is a registration heartbeated lately, with its claims JSON
// (NULL when it did not say).
type LiveWorker struct {
	WorkerID string         `db:"worker_id"`
	Queues   StringList     `db:"queues"`
	Claims   sql.NullString `db:"claims"`
}

// LiveWorkers lists the registrations heartbeated since cutoff, of every
// namespace.
func (s *Store) LiveWorkers(ctx context.Context, cutoff time.Time) ([]LiveWorker, error) {
	var out []LiveWorker
	if err := s.db.SelectContext(ctx, &out, s.query(qFleetLiveWorkers), DateTime(cutoff)); err != nil {
		return nil, fmt.Errorf("live workers: %w", err)
	}
	return out, nil
}

// PendingGroup counts the pending jobs of one queue, handler and kind.
type PendingGroup struct {
	Queue   string `db:"queue"`
	Handler string `db:"handler"`
	IsStep  bool   `db:"is_step"`
	IsBatch bool   `db:"is_batch"`
	N       int    `db:"n"`
}

// PendingGroups counts the pending jobs of every queue (at most 50,000
// read) by queue, handler and kind, largest first; session-bound jobs
// are left out (their sessions admit them).
func (s *Store) PendingGroups(ctx context.Context) ([]PendingGroup, error) {
	var out []PendingGroup
	if err := s.db.SelectContext(ctx, &out, s.query(qFleetPending)); err != nil {
		return nil, fmt.Errorf("pending groups: %w", err)
	}
	return out, nil
}

// PHPSeenQueues lists the queues on which a PHP worker is running a job
// now or completed one since cutoff.
func (s *Store) PHPSeenQueues(ctx context.Context, since time.Time) ([]string, error) {
	var out []string
	if err := s.db.SelectContext(ctx, &out, s.query(qFleetPHPSeen), DateTime(since)); err != nil {
		return nil, fmt.Errorf("php seen queues: %w", err)
	}
	return out, nil
}

// Unclaimed is a handler whose pending jobs on a queue no live queuety
// worker runs (status).
type Unclaimed struct {
	Queue   string `json:"-"`
	Handler string `json:"handler"`
	Kind    string `json:"kind"` // job, step or batch
	Jobs    int    `json:"jobs"`
	// PHPSeen: a PHP worker ran a job on the queue lately (PHP workers do
	// not register, so this is the only sign of them).
	PHPSeen bool `json:"php_seen"`
}
