package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// Workflow lifecycle log events (Queuety's LogEvent).
const (
	LogWorkflowPaused           = "workflow_paused"
	LogWorkflowResumed          = "workflow_resumed"
	LogWorkflowCancelled        = "workflow_cancelled"
	LogWorkflowDeadlineExceeded = "workflow_deadline_exceeded"
	LogDebug                    = "debug"
)

// CancelWorkflowRow marks the locked workflow cancelled (completed_at = NOW()).
func (w *WorkflowTx) CancelWorkflowRow(id int64) error {
	_, err := w.exec(qLcCancelWorkflow, id)
	return err
}

// ResumePausedWorkflow sets the locked workflow running again.
func (w *WorkflowTx) ResumePausedWorkflow(id int64) error {
	_, err := w.exec(qLcResumeWorkflow, id)
	return err
}

// RetryFailedWorkflow sets the locked failed workflow running and clears its
// failure.
func (w *WorkflowTx) RetryFailedWorkflow(id int64) error {
	_, err := w.exec(qLcRetryWorkflow, id)
	return err
}

// PauseRunningWorkflow pauses a running workflow (no lock, as Workflow::pause) and
// writes its workflow_paused log, which PHP writes whether or not a row
// changed. It reports whether the row changed.
func (s *Store) PauseRunningWorkflow(ctx context.Context, id int64) (bool, error) {
	var changed bool
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.query(qLcPauseWorkflow), id)
		if err != nil {
			return fmt.Errorf("pause workflow %d: %w", id, err)
		}
		n, _ := res.RowsAffected()
		changed = n > 0
		return s.insertLogs(ctx, tx, []LogRow{WorkflowLog(id, "", "default", LogWorkflowPaused)})
	})
	return changed, err
}

// OverdueWorkflows lists running workflows whose deadline_at passed.
func (s *Store) OverdueWorkflows(ctx context.Context, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qLcFindOverdueWorkflows), limit); err != nil {
		return nil, fmt.Errorf("find overdue workflows: %w", err)
	}
	return ids, nil
}

// StaleStepDecision is what to do with one stale workflow step job.
type StaleStepDecision struct {
	// Bury: no attempts left. The job is logged `buried`; the row itself is
	// buried unless KeepRow (a for_each branch, buried by the branch's
	// terminal failure after the commit; until then its reserved_at is
	// refreshed so no concurrent sweep takes it again).
	Bury, KeepRow bool
	// Leave: not this sweep's to recover (PHP's recover_stale will); the
	// row is not touched.
	Leave bool
	// Delay is the backoff of a retry.
	Delay time.Duration
}

// RecoverStaleWorkflowSteps is Worker::recover_stale for workflow step
// jobs: processing steps not heard from since cutoff are retried after
// decide's delay or buried with StaleMessage, with the same log rows as
// plain jobs. The buried rows are returned; the caller fails their
// workflows once this has committed.
func (s *Store) RecoverStaleWorkflowSteps(ctx context.Context, cutoff time.Time, limit int, decide func(*JobRow) StaleStepDecision) (retried int, buried []JobRow, err error) {
	return s.recoverStale(ctx, qLcFindStaleWorkflowSteps, cutoff, limit, decide)
}

// WorkflowFilter selects workflows for ListWorkflows.
type WorkflowFilter struct {
	Status string // "" = any
	Name   string // "" = any
	Limit  int    // < 1: 50, as Workflow::list
}

// ListWorkflows lists workflow rows, newest first (Workflow::list).
func (s *Store) ListWorkflows(ctx context.Context, f WorkflowFilter) ([]WorkflowRow, error) {
	limit := f.Limit
	if limit < 1 {
		limit = 50
	}
	var rows []WorkflowRow
	var err error
	switch {
	case f.Status != "" && f.Name != "":
		err = s.unsafe.SelectContext(ctx, &rows, s.query(qLcListWorkflowsByStatusName), f.Status, f.Name, limit)
	case f.Status != "":
		err = s.unsafe.SelectContext(ctx, &rows, s.query(qLcListWorkflowsByStatus), f.Status, limit)
	case f.Name != "":
		err = s.unsafe.SelectContext(ctx, &rows, s.query(qLcListWorkflowsByName), f.Name, limit)
	default:
		err = s.unsafe.SelectContext(ctx, &rows, s.query(qLcListWorkflows), limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return rows, nil
}

// WorkflowEventRow is one stored workflow_events row.
type WorkflowEventRow struct {
	ID            int64          `db:"id"`
	WorkflowID    int64          `db:"workflow_id"`
	JobID         sql.NullInt64  `db:"job_id"`
	ParentEventID sql.NullInt64  `db:"parent_event_id"`
	StepIndex     int            `db:"step_index"`
	StepName      sql.NullString `db:"step_name"`
	StepType      sql.NullString `db:"step_type"`
	Handler       string         `db:"handler"`
	Event         string         `db:"event"`
	Queue         sql.NullString `db:"queue"`
	Attempt       sql.NullInt64  `db:"attempt"`
	Input         sql.NullString `db:"input"`
	Output        sql.NullString `db:"output"`
	StateBefore   sql.NullString `db:"state_before"`
	StateAfter    sql.NullString `db:"state_after"`
	Context       sql.NullString `db:"context"`
	Artifacts     sql.NullString `db:"artifacts"`
	Chunks        sql.NullString `db:"chunks"`
	Error         sql.NullString `db:"error"`
	DurationMS    sql.NullInt64  `db:"duration_ms"`
	CreatedAt     time.Time      `db:"created_at"`
}

// WorkflowTimeline returns a workflow's events in order, after event id
// `after`, at most limit.
func (s *Store) WorkflowTimeline(ctx context.Context, workflowID, after int64, limit int) ([]WorkflowEventRow, error) {
	var rows []WorkflowEventRow
	if err := s.unsafe.SelectContext(ctx, &rows, s.query(qLcWorkflowTimeline), workflowID, after, limit); err != nil {
		return nil, fmt.Errorf("workflow timeline: %w", err)
	}
	return rows, nil
}

// RawRow is one row as column names and values: nil for NULL, a string
// for everything else (DATETIME as "YYYY-MM-DD HH:MM:SS", numbers in
// decimal), as PDO returns them.
type RawRow struct {
	Columns []string
	Values  []*string
}

// Get returns a column's value (nil when NULL or absent).
func (r RawRow) Get(col string) *string {
	for i, c := range r.Columns {
		if c == col {
			return r.Values[i]
		}
	}
	return nil
}

// WorkflowExportRows is every row Queuety's WorkflowExporter reads.
type WorkflowExportRows struct {
	Workflow                                                     RawRow
	Jobs, Events, Logs, Signals, Dependencies, Artifacts, Chunks []RawRow
}

// ExportWorkflowRows reads a workflow's rows for export in one consistent
// snapshot.
func (s *Store) ExportWorkflowRows(ctx context.Context, id int64) (*WorkflowExportRows, error) {
	out := &WorkflowExportRows{}
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	wf, err := rawRows(ctx, tx, s.query(qLcExportWorkflow), id)
	if err != nil {
		return nil, err
	}
	if len(wf) == 0 {
		return nil, fmt.Errorf("workflow %d: %w", id, ErrWorkflowNotFound)
	}
	out.Workflow = wf[0]
	for _, p := range []struct {
		dst *[]RawRow
		q   string
	}{
		{&out.Jobs, qLcExportJobs}, {&out.Events, qLcExportEvents}, {&out.Logs, qLcExportLogs},
		{&out.Signals, qLcExportSignals}, {&out.Dependencies, qLcExportDependencies},
		{&out.Artifacts, qLcExportArtifacts}, {&out.Chunks, qLcExportChunks},
	} {
		if *p.dst, err = rawRows(ctx, tx, s.query(p.q), id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func rawRows(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) ([]RawRow, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []RawRow
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := RawRow{Columns: cols, Values: make([]*string, len(cols))}
		for i, v := range vals {
			r.Values[i] = rawString(v)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func rawString(v any) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		s = string(x)
	case string:
		s = x
	case time.Time:
		s = x.UTC().Format(time.DateTime)
	case int64:
		s = strconv.FormatInt(x, 10)
	case uint64:
		s = strconv.FormatUint(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

// ErrArtifactNotFound is returned for a missing artifact.
var ErrArtifactNotFound = errors.New("artifact not found")

// Artifact is one artifacts row.
type Artifact struct {
	ID         int64          `db:"id"`
	WorkflowID int64          `db:"workflow_id"`
	Key        string         `db:"artifact_key"`
	Kind       string         `db:"kind"`
	Content    string         `db:"content"`
	Metadata   sql.NullString `db:"metadata"`
	StepIndex  sql.NullInt64  `db:"step_index"`
	CreatedAt  time.Time      `db:"created_at"`
	UpdatedAt  time.Time      `db:"updated_at"`
}

// PutArtifact is ArtifactStore::put: insert or replace (workflow, key).
// content and metadata are the stored bytes.
func (s *Store) PutArtifact(ctx context.Context, workflowID int64, key, kind, content, metadata string, stepIndex sql.NullInt64) error {
	if _, err := s.db.ExecContext(ctx, s.query(qLcPutArtifact), workflowID, key, kind, content, metadata, stepIndex); err != nil {
		return fmt.Errorf("put artifact: %w", err)
	}
	return nil
}

// GetArtifact reads one artifact.
func (s *Store) GetArtifact(ctx context.Context, workflowID int64, key string) (*Artifact, error) {
	var a Artifact
	err := s.unsafe.GetContext(ctx, &a, s.query(qLcGetArtifact), workflowID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("artifact %q of workflow %d: %w", key, workflowID, ErrArtifactNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get artifact: %w", err)
	}
	return &a, nil
}

// DeleteArtifact deletes one artifact (no error when missing).
func (s *Store) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	_, err := s.db.ExecContext(ctx, s.query(qLcDeleteArtifact), workflowID, key)
	return err
}

// ArtifactKeys lists a workflow's artifact keys, sorted (ArtifactStore::summary).
func (s *Store) ArtifactKeys(ctx context.Context, workflowID int64) ([]string, error) {
	keys := []string{}
	if err := s.db.SelectContext(ctx, &keys, s.query(qLcArtifactKeys), workflowID); err != nil {
		return nil, fmt.Errorf("artifact keys: %w", err)
	}
	return keys, nil
}

// WorkflowStatuses returns the status of each existing workflow of ids.
func (s *Store) WorkflowStatuses(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	q, args, err := s.in(qLcWorkflowStatuses, ids)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID     int64  `db:"id"`
		Status string `db:"status"`
	}
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("workflow statuses: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Status
	}
	return out, nil
}

// ReceivedSignal is one signals row's name and payload.
type ReceivedSignal struct {
	Name    string `db:"signal_name"`
	Payload string `db:"payload"`
}

// SignalsOf lists a workflow's signals in arrival order.
func (s *Store) SignalsOf(ctx context.Context, workflowID int64) ([]ReceivedSignal, error) {
	var rows []ReceivedSignal
	if err := s.db.SelectContext(ctx, &rows, s.query(qLcSignalsOf), workflowID); err != nil {
		return nil, fmt.Errorf("signals of workflow %d: %w", workflowID, err)
	}
	return rows, nil
}

// CountWorkflows counts the workflows with a status.
func (s *Store) CountWorkflows(ctx context.Context, status string) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(qLcCountWorkflowsByStatus), status); err != nil {
		return 0, fmt.Errorf("count workflows: %w", err)
	}
	return n, nil
}

// TruncateWorkflows empties the workflows, workflow_events and
// workflow_dispatch_keys tables (benchmarks).
func (s *Store) TruncateWorkflows(ctx context.Context) error {
	for _, q := range []string{qLcTruncateWorkflows, qLcTruncateWorkflowEvents, qLcTruncateDispatchKeys} {
		if _, err := s.db.ExecContext(ctx, s.query(q)); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
