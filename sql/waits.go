package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Storage of waits, signals and child workflows (queries_waits.sql).

// Workflow statuses a wait parks in.
const (
	StatusWaitingForSignal    = "waiting_for_signal"
	StatusWaitingForWorkflows = "waiting_for_workflows"
)

// SignalRow is one stored signal (name and raw JSON payload).
type SignalRow struct {
	Name    string `db:"signal_name"`
	Payload string `db:"payload"`
}

// DependencyRow is one workflow's status and state, as a wait reads it.
type DependencyRow struct {
	ID     int64  `db:"id"`
	Status string `db:"status"`
	State  string `db:"state"`
}

// Waiter is a waiting workflow and the step it waits at.
type Waiter struct {
	WorkflowID int64 `db:"waiting_workflow_id"`
	StepIndex  int   `db:"step_index"`
}

// InsertSignal stores a signal row (payload: JSON bytes).
func (w *WorkflowTx) InsertSignal(workflowID int64, name string, payload []byte) error {
	_, err := w.exec(qInsertSignal, workflowID, name, string(payload))
	return err
}

// InsertSignal stores a signal row outside any transaction, as a process
// that only writes rows (PHP's bridge, a test) would.
func (s *Store) InsertSignal(ctx context.Context, workflowID int64, name string, payload []byte) error {
	_, err := s.db.ExecContext(ctx, s.query(qInsertSignal), workflowID, name, string(payload))
	if err != nil {
		return fmt.Errorf("insert signal: %w", err)
	}
	return nil
}

// Signals returns the stored signals of a workflow with one of names,
// oldest first.
func (w *WorkflowTx) Signals(workflowID int64, names []string) ([]SignalRow, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if err := w.real(); err != nil {
		return nil, err
	}
	q, args, err := w.s.in(qSignalsForNames, workflowID, names)
	if err != nil {
		return nil, err
	}
	var rows []SignalRow
	if err := w.tx.SelectContext(w.ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qSignalsForNames, err)
	}
	return rows, nil
}

// WorkflowsByID reads the id, status and state of workflows, keyed by id
// (missing ones are absent).
func (w *WorkflowTx) WorkflowsByID(ids []int64) (map[int64]DependencyRow, error) {
	out := map[int64]DependencyRow{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := w.real(); err != nil {
		return nil, err
	}
	q, args, err := w.s.in(qWorkflowsByIDs, ids)
	if err != nil {
		return nil, err
	}
	var rows []DependencyRow
	if err := w.tx.SelectContext(w.ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qWorkflowsByIDs, err)
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// WorkflowStatuses reads the id and status (State left empty) of
// workflows, keyed by id (missing ones are absent).
func (w *WorkflowTx) WorkflowStatuses(ids []int64) (map[int64]DependencyRow, error) {
	out := map[int64]DependencyRow{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := w.real(); err != nil {
		return nil, err
	}
	q, args, err := w.s.in(qWorkflowStatusesByIDs, ids)
	if err != nil {
		return nil, err
	}
	var rows []DependencyRow
	if err := w.tx.SelectContext(w.ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qWorkflowStatusesByIDs, err)
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// WorkflowsByID reads workflows' id, status and state outside a
// transaction, keyed by id (missing ones are absent).
func (s *Store) WorkflowsByID(ctx context.Context, ids []int64) (map[int64]DependencyRow, error) {
	out := map[int64]DependencyRow{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []DependencyRow
	if err := s.selectIn(ctx, s.db, &rows, qWorkflowsByIDs, ids); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// WorkflowStatus reads a workflow's status ("" when it is missing).
func (s *Store) WorkflowStatus(ctx context.Context, id int64) (string, error) {
	var st string
	err := s.db.GetContext(ctx, &st, s.query(qWorkflowStatus), id)
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", qWorkflowStatus, err)
	}
	return st, nil
}

// ClearDependencies deletes the dependency rows of one waiting step.
func (w *WorkflowTx) ClearDependencies(workflowID int64, step int) error {
	_, err := w.exec(qDeleteDependencies, workflowID, step)
	return err
}

// StoreDependencies replaces the dependency rows of one waiting step.
func (w *WorkflowTx) StoreDependencies(workflowID int64, step int, deps []int64) error {
	if err := w.ClearDependencies(workflowID, step); err != nil {
		return err
	}
	for _, d := range deps {
		if _, err := w.exec(qInsertDependency, workflowID, step, d); err != nil {
			return err
		}
	}
	return nil
}

// MarkDependencySatisfied stamps satisfied_at on one dependency row.
func (w *WorkflowTx) MarkDependencySatisfied(workflowID int64, step int, dependency int64) error {
	_, err := w.exec(qMarkDependencySatisfied, workflowID, step, dependency)
	return err
}

// WakeFacts is what waking the dependents of a workflow starts from.
type WakeFacts struct {
	Status    string
	HasParent bool
	// Waiters are the (workflow, step) pairs with a dependency row on it,
	// by workflow id.
	Waiters []Waiter
}

// WakeFacts reads, for each of ids that exists, its status, whether it has
// a run_workflow parent and who waits on it, in one statement.
func (s *Store) WakeFacts(ctx context.Context, ids []int64) (map[int64]WakeFacts, error) {
	out := map[int64]WakeFacts{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID        int64         `db:"id"`
		Status    string        `db:"status"`
		HasParent bool          `db:"has_parent"`
		Waiting   sql.NullInt64 `db:"waiting_workflow_id"`
		Step      sql.NullInt64 `db:"step_index"`
	}
	if err := s.selectIn(ctx, s.db, &rows, qWakeFacts, ids); err != nil {
		return nil, err
	}
	for _, r := range rows {
		f := out[r.ID]
		f.Status, f.HasParent = r.Status, r.HasParent
		if r.Waiting.Valid {
			f.Waiters = append(f.Waiters, Waiter{WorkflowID: r.Waiting.Int64, StepIndex: int(r.Step.Int64)})
		}
		out[r.ID] = f
	}
	return out, nil
}

// Park sets a waiting status with the state and step.
func (w *WorkflowTx) Park(id int64, status string, state []byte, step int) error {
	_, err := w.exec(qParkWorkflow, status, string(state), step, id)
	return err
}

// Resume sets the workflow running with the state and the next step.
func (w *WorkflowTx) Resume(id int64, state []byte, step int) error {
	_, err := w.exec(qResumeWorkflow, string(state), step, id)
	return err
}

// ParentOf returns the run_workflow parent link of a workflow (invalid
// when it has none or is missing).
func (w *WorkflowTx) ParentOf(id int64) (parent, step sql.NullInt64, err error) {
	var r struct {
		Parent sql.NullInt64 `db:"parent_workflow_id"`
		Step   sql.NullInt64 `db:"parent_step_index"`
	}
	if err := w.real(); err != nil {
		return parent, step, err
	}
	err = w.tx.GetContext(w.ctx, &r, w.s.query(qChildOf), id)
	if err == sql.ErrNoRows {
		return parent, step, nil
	}
	if err != nil {
		return parent, step, fmt.Errorf("%s: %w", qChildOf, err)
	}
	return r.Parent, r.Step, nil
}

// WaitingForWorkflows pages through waiting_for_workflows workflows with an
// id above after.
func (s *Store) WaitingForWorkflows(ctx context.Context, after int64, limit int) ([]Waiter, error) {
	var rows []struct {
		ID   int64 `db:"id"`
		Step int   `db:"current_step"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.query(qWaitingForWorkflowsAfter), after, limit); err != nil {
		return nil, fmt.Errorf("%s: %w", qWaitingForWorkflowsAfter, err)
	}
	out := make([]Waiter, len(rows))
	for i, r := range rows {
		out[i] = Waiter{WorkflowID: r.ID, StepIndex: r.Step}
	}
	return out, nil
}

// MaxSignalID is the highest signal id (0 when there is none).
func (s *Store) MaxSignalID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.GetContext(ctx, &id, s.query(qMaxSignalID)); err != nil {
		return 0, fmt.Errorf("%s: %w", qMaxSignalID, err)
	}
	return id, nil
}

// SignalWaiters lists workflows waiting for a signal that have a signal
// row with an id in (after, upto].
func (s *Store) SignalWaiters(ctx context.Context, after, upto int64) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qSignalWaitersBetween), after, upto); err != nil {
		return nil, fmt.Errorf("%s: %w", qSignalWaitersBetween, err)
	}
	return ids, nil
}

// InsertChildWorkflow writes a child workflow (run_workflow or
// start_workflows) in the transaction: the row, its first jobs and its
// workflow_started log. Children have no idempotency key.
func (w *WorkflowTx) InsertChildWorkflow(p InsertWorkflow) (int64, error) {
	if err := p.checkSteps(); err != nil {
		return 0, err
	}
	_, id, err := w.send(qInsertWorkflow, p.Name, string(p.State), p.TotalSteps,
		p.ParentWorkflowID, p.ParentStepIndex, p.DeadlineAt)
	if err != nil {
		return 0, err
	}
	if err := w.InsertStepJobs(id, p.Jobs); err != nil {
		return 0, err
	}
	return id, w.InsertLogs(WorkflowLog(id, p.Name, p.Queue, EventWorkflowStarted))
}

// StuckRunWorkflowChildren pages through terminal children whose
// run_workflow parent still waits for them with no job (ids above after).
func (s *Store) StuckRunWorkflowChildren(ctx context.Context, after int64, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qStuckRunWorkflowChildren), after, limit); err != nil {
		return nil, fmt.Errorf("%s: %w", qStuckRunWorkflowChildren, err)
	}
	return ids, nil
}
