package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
)

// Why a job can never run as it is (StuckJob.Kind), the values of the
// stuck-reason expression in queries_stuck.sql.
const (
	StuckDependencyCycle   = "dependency_cycle"
	StuckDependencySelf    = "dependency_self"
	StuckDependencyMissing = "dependency_missing"
	StuckDependencyBuried  = "dependency_buried"
	StuckConcurrencyZero   = "concurrency_limit_zero"
	StuckWorkflowMissing   = "workflow_missing"
	StuckReservedAtNull    = "reserved_at_null"
	StuckReservedFuture    = "reserved_at_future"
)

// Attention is one kind of row that can never run as it is, in one
// queue: how many were found (within the diagnosis's bounds), a few ids,
// and what is wrong with them.
type Attention struct {
	Kind string `json:"kind"`
	// Table is "jobs" or "workflows": what the ids are.
	Table  string  `json:"table"`
	Count  int     `json:"count"`
	IDs    []int64 `json:"ids"`
	Reason string  `json:"reason"`
}

// StuckKinds describes each job kind for a summary (a row's own reason,
// StuckJob.Reason, names its dependency, workflow or group).
var StuckKinds = map[string]string{
	StuckDependencyCycle:   "pending; its depends_on chain loops back to it",
	StuckDependencySelf:    "pending; depends on itself",
	StuckDependencyMissing: "pending; depends on a job that does not exist",
	StuckDependencyBuried:  "pending; depends on a buried or failed job",
	StuckConcurrencyZero:   "pending; its concurrency group has limit 0",
	StuckWorkflowMissing:   "pending workflow step whose workflow row does not exist",
	StuckReservedAtNull:    "processing without reserved_at (the stale sweep ages it from available_at)",
	StuckReservedFuture:    "processing with reserved_at in the future: the stale sweep takes it once it is more than a day ahead",
}

// StuckJob is a job that can never run as it is, with the columns its
// reason names.
type StuckJob struct {
	ID               int64          `db:"id"`
	Queue            string         `db:"queue"`
	Kind             string         `db:"reason"`
	DependsOn        sql.NullInt64  `db:"depends_on"`
	DependencyStatus sql.NullString `db:"dep_status"`
	WorkflowID       sql.NullInt64  `db:"workflow_id"`
	ConcurrencyGroup sql.NullString `db:"concurrency_group"`
}

// Reason says, for an operator, why the job cannot run and what would.
func (j StuckJob) Reason() string {
	switch j.Kind {
	case StuckDependencyCycle:
		return fmt.Sprintf("depends on job %d, which depends back on it: a cycle neither side can leave", j.DependsOn.Int64)
	case StuckDependencySelf:
		return "depends on itself"
	case StuckDependencyMissing:
		return fmt.Sprintf("depends on job %d, which does not exist", j.DependsOn.Int64)
	case StuckDependencyBuried:
		return fmt.Sprintf("depends on job %d, which is %s and will never complete unless retried", j.DependsOn.Int64, j.DependencyStatus.String)
	case StuckConcurrencyZero:
		return fmt.Sprintf("concurrency group %q has limit 0: never admitted", j.ConcurrencyGroup.String)
	case StuckWorkflowMissing:
		return fmt.Sprintf("workflow step of workflow %d, which does not exist: never claimed", j.WorkflowID.Int64)
	case StuckReservedAtNull:
		return "processing without reserved_at: the stale sweep ages it from available_at"
	case StuckReservedFuture:
		return "processing with reserved_at in the future: the stale sweep takes it at its next run when more than a day ahead, else once it ages"
	}
	return j.Kind
}

// StuckScan bounds a diagnosis: Pending is how many of the oldest
// pending jobs are examined (and how many of the jobs with the highest
// depends_on), Workflows how many of the oldest live workflows, Limit how
// many rows of each scan are returned.
type StuckScan struct {
	Pending, Workflows, Limit int
}

// DefaultStuckScan is what `status` examines: cheap enough to run on
// every call against a large jobs table.
var DefaultStuckScan = StuckScan{Pending: 5000, Workflows: 500, Limit: 100}

func (b StuckScan) orDefault() StuckScan {
	d := DefaultStuckScan
	if b.Pending > 0 {
		d.Pending = b.Pending
	}
	if b.Workflows > 0 {
		d.Workflows = b.Workflows
	}
	if b.Limit > 0 {
		d.Limit = b.Limit
	}
	return d
}

// StuckJobs finds jobs that can never run as they are, by id: among the
// oldest scan.Pending pending jobs and the scan.Pending jobs with the
// highest depends_on, those with a dependency cycle, a dependency on
// themselves, on a missing job or on a buried or failed one, a concurrency
// limit of 0, or a workflow row that does not exist; and processing rows
// with reserved_at NULL or far in the future. At most scan.Limit of each
// scan.
func (s *Store) StuckJobs(ctx context.Context, scan StuckScan) ([]StuckJob, error) {
	scan = scan.orDefault()
	var pending, dependents, processing []StuckJob
	if err := s.db.SelectContext(ctx, &pending, s.query(qStuckPendingJobs), scan.Pending, scan.Limit); err != nil {
		return nil, fmt.Errorf("stuck pending jobs: %w", err)
	}
	if err := s.db.SelectContext(ctx, &dependents, s.query(qStuckDependentJobs), scan.Pending, scan.Limit); err != nil {
		return nil, fmt.Errorf("stuck dependent jobs: %w", err)
	}
	if err := s.db.SelectContext(ctx, &processing, s.query(qStuckProcessingJobs), scan.Limit); err != nil {
		return nil, fmt.Errorf("stuck processing jobs: %w", err)
	}
	return uniqueByID(pending, dependents, processing), nil
}

// uniqueByID merges scans that may find the same job, in id order.
func uniqueByID(scans ...[]StuckJob) []StuckJob {
	seen := map[int64]bool{}
	var out []StuckJob
	for _, scan := range scans {
		for _, j := range scan {
			if !seen[j.ID] {
				seen[j.ID] = true
				out = append(out, j)
			}
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out
}

// StuckJobsByID classifies the given jobs: those that can never run as
// they are, by id.
func (s *Store) StuckJobsByID(ctx context.Context, ids []int64) (map[int64]StuckJob, error) {
	out := map[int64]StuckJob{}
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := s.in(qStuckJobsByID, ids)
	if err != nil {
		return nil, err
	}
	var rows []StuckJob
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("stuck jobs by id: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// WorkflowCandidate is a live workflow whose definition may not be
// runnable; the workflow package decides (it parses the state as PHP).
type WorkflowCandidate struct {
	ID          int64  `db:"id"`
	Name        string `db:"name"`
	Status      string `db:"status"`
	CurrentStep int    `db:"current_step"`
	TotalSteps  int    `db:"total_steps"`
	State       string `db:"state"`
}

// StuckWorkflowCandidates returns, among the oldest scan.Workflows live
// workflows, those whose _steps has fewer usable entries than
// total_steps or whose state the server cannot read (at most scan.Limit).
func (s *Store) StuckWorkflowCandidates(ctx context.Context, scan StuckScan) ([]WorkflowCandidate, error) {
	scan = scan.orDefault()
	var rows []WorkflowCandidate
	if err := s.db.SelectContext(ctx, &rows, s.query(qStuckWorkflowCandidates), scan.Workflows, scan.Limit); err != nil {
		return nil, fmt.Errorf("stuck workflow candidates: %w", err)
	}
	return rows, nil
}

// JobsByID reads whole job rows by id, newest first; missing ids are
// skipped.
func (s *Store) JobsByID(ctx context.Context, ids []int64) ([]JobRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := s.in(qJobsByIDs, ids)
	if err != nil {
		return nil, err
	}
	var rows []JobRow
	if err := s.unsafe.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("jobs by id: %w", err)
	}
	return rows, nil
}
