package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Local activity execution statuses (activity_executions.status).
const (
	ActivityPending   = "pending"
	ActivityRunning   = "running"
	ActivityCompleted = "completed"
	ActivityFailed    = "failed"
	ActivityCancelled = "cancelled"
)

// Attempt statuses (activity_attempts.status). An expired attempt was
// interrupted (its worker died) and closed by the cold replay after it.
const (
	AttemptRunning   = "running"
	AttemptCompleted = "completed"
	AttemptFailed    = "failed"
	AttemptExpired   = "expired"
	AttemptCancelled = "cancelled"
)

// ActivityExecution is one activity_executions row.
type ActivityExecution struct {
	ID                        int64          `db:"id" json:"id"`
	WorkflowID                int64          `db:"workflow_id" json:"workflow_id"`
	StepIndex                 int            `db:"step_index" json:"step_index"`
	JobID                     int64          `db:"job_id" json:"job_id"`
	ActivityType              string         `db:"activity_type" json:"activity_type"`
	ExecutionMode             string         `db:"execution_mode" json:"execution_mode"`
	QueueBypassed             bool           `db:"queue_bypassed" json:"queue_bypassed"`
	Status                    string         `db:"status" json:"status"`
	AttemptCount              int            `db:"attempt_count" json:"attempt_count"`
	CurrentAttemptID          sql.NullString `db:"current_attempt_id" json:"-"`
	ActivityOptions           string         `db:"activity_options" json:"-"`
	RetryPolicy               string         `db:"retry_policy" json:"-"`
	Result                    sql.NullString `db:"result" json:"-"`
	History                   sql.NullString `db:"history" json:"-"`
	LastError                 sql.NullString `db:"last_error" json:"-"`
	LastErrorClass            sql.NullString `db:"last_error_class" json:"-"`
	RetryReason               sql.NullString `db:"retry_reason" json:"-"`
	TimeoutKind               sql.NullString `db:"timeout_kind" json:"-"`
	ScheduleToCloseDeadlineAt sql.NullTime   `db:"schedule_to_close_deadline_at" json:"-"`
	CloseDeadlineAt           sql.NullTime   `db:"close_deadline_at" json:"-"`
	HeartbeatDeadlineAt       sql.NullTime   `db:"heartbeat_deadline_at" json:"-"`
	LastHeartbeatAt           sql.NullTime   `db:"last_heartbeat_at" json:"-"`
	StartedAt                 sql.NullTime   `db:"started_at" json:"-"`
	ClosedAt                  sql.NullTime   `db:"closed_at" json:"-"`
	CreatedAt                 time.Time      `db:"created_at" json:"-"`
	UpdatedAt                 time.Time      `db:"updated_at" json:"-"`
}

// Open reports whether the execution may still run an attempt.
func (x *ActivityExecution) Open() bool {
	return x.Status == ActivityPending || x.Status == ActivityRunning
}

// ActivityAttempt is one activity_attempts row.
type ActivityAttempt struct {
	ID              string         `db:"id"`
	ExecutionID     int64          `db:"execution_id"`
	WorkflowID      int64          `db:"workflow_id"`
	JobID           int64          `db:"job_id"`
	AttemptNumber   int            `db:"attempt_number"`
	Status          string         `db:"status"`
	LeaseOwner      sql.NullString `db:"lease_owner"`
	RetryReason     sql.NullString `db:"retry_reason"`
	TimeoutKind     sql.NullString `db:"timeout_kind"`
	ErrorMessage    sql.NullString `db:"error_message"`
	ErrorClass      sql.NullString `db:"error_class"`
	Progress        sql.NullString `db:"progress"`
	StartedAt       time.Time      `db:"started_at"`
	LastHeartbeatAt sql.NullTime   `db:"last_heartbeat_at"`
	LeaseExpiresAt  sql.NullTime   `db:"lease_expires_at"`
	ClosedAt        sql.NullTime   `db:"closed_at"`
}

// NewActivityExecution is what the first encounter of a local activity
// writes (status pending, no attempt yet).
type NewActivityExecution struct {
	WorkflowID   int64
	StepIndex    int
	JobID        int64
	ActivityType string
	// Options and RetryPolicy are PHP-encoded JSON snapshots.
	Options, RetryPolicy []byte
	// ScheduleToCloseDeadline is zero when the option is unset.
	ScheduleToCloseDeadline time.Time
	// History is the execution's history list (PHP-encoded JSON).
	History []byte
	Now     time.Time
}

// StartAttempt is one local attempt starting.
type StartAttempt struct {
	ExecutionID, WorkflowID, JobID int64
	AttemptID                      string
	AttemptNumber                  int
	LeaseOwner                     string
	RetryReason                    string // "" for the first attempt
	// CloseDeadline and HeartbeatDeadline are zero when unset.
	CloseDeadline, HeartbeatDeadline time.Time
	LeaseExpires                     time.Time
	History                          []byte
	Now                              time.Time
}

// nullTime is NULL for the zero time; DATETIME(3) keeps milliseconds.
func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t.UTC(), Valid: true}
}

func nullStr(s string) sql.NullString {
	if s == "" {
		return sql.NullString{}
	}
	return String(s)
}

// InsertClaimedStepJob inserts a local activity's step job already claimed
// by workerID (processing, attempts 1) and returns its id.
func (w *WorkflowTx) InsertClaimedStepJob(workflowID int64, j StepJob, workerID string) (int64, error) {
	_, id, err := w.send(qInsertClaimedStepJob, claimedStepJobArgs(workflowID, j, workerID)...)
	return id, err
}

// InsertChainedStepJob inserts the job of a workflow's next step already
// claimed by workerID, as InsertClaimedStepJob, for the worker to run it
// right after the commit (a chained step). In a batch the insert is
// deferred with the others; the id is set once it is sent, at the latest
// when the transaction commits.
func (w *WorkflowTx) InsertChainedStepJob(workflowID int64, j StepJob, workerID string) (*int64, error) {
	id := new(int64)
	if w.batch != nil {
		w.deferred.stepJobs = append(w.deferred.stepJobs, pendingStepJob{workflowID: workflowID, job: j, claimedBy: workerID, id: id})
		return id, nil
	}
	var err error
	*id, err = w.InsertClaimedStepJob(workflowID, j, workerID)
	return id, err
}

// RenewJobLease refreshes the lease (reserved_at) of the step job a local
// attempt runs under, with progress stored in heartbeat_data when given.
// It reports false when the attempt no longer holds the row.
func (w *WorkflowTx) RenewJobLease(jobID int64, workerID string, attempts int, progress []byte) (bool, error) {
	var n int64
	var err error
	if progress != nil {
		n, err = w.exec(qRenewJobLeaseProgress, string(progress), jobID, workerID, attempts)
	} else {
		n, err = w.exec(qRenewJobLease, jobID, workerID, attempts)
	}
	return n > 0, err
}

// StartActivityAttempt sets the execution running for a new attempt and
// inserts the attempt row.
func (w *WorkflowTx) StartActivityAttempt(p StartAttempt) error {
	now := p.Now.UTC()
	if _, err := w.exec(qStartActivityExecution, p.AttemptID, now, nullTime(p.CloseDeadline),
		nullTime(p.HeartbeatDeadline), string(p.History), now, p.ExecutionID); err != nil {
		return err
	}
	_, err := w.exec(qInsertActivityAttempt, p.AttemptID, p.ExecutionID, p.WorkflowID, p.JobID, p.AttemptNumber,
		p.LeaseOwner, nullStr(p.RetryReason), now, nullTime(p.LeaseExpires))
	return err
}

// CloseActivityAttempt closes a running attempt with status (completed,
// failed, expired, cancelled) and reports whether it was still running.
func (w *WorkflowTx) CloseActivityAttempt(id, status, message, class, timeoutKind string, now time.Time) (bool, error) {
	n, err := w.exec(qCloseActivityAttempt, status, nullStr(message), nullStr(class), nullStr(timeoutKind), now.UTC(), id)
	return n > 0, err
}

// Every write of an execution below also stores its history list
// (PHP-encoded JSON), to which the caller appended under the row's lock.

// CloseActivityExecution ends an execution as failed or cancelled.
func (w *WorkflowTx) CloseActivityExecution(id int64, status, message, class, timeoutKind string, history []byte, now time.Time) error {
	_, err := w.exec(qCloseActivityExecution, status, nullStr(message), nullStr(class), nullStr(timeoutKind),
		string(history), now.UTC(), now.UTC(), id)
	return err
}

// RetryActivityExecution sets the execution pending again, the next
// attempt to run for reason (failure, timeout, cold_replay).
func (w *WorkflowTx) RetryActivityExecution(id int64, message, class, reason, timeoutKind string, history []byte, now time.Time) error {
	_, err := w.exec(qRetryActivityExecution, nullStr(message), nullStr(class), reason, nullStr(timeoutKind),
		string(history), now.UTC(), id)
	return err
}

// HeartbeatActivity records a heartbeat on the execution and its running
// attempt (progress is PHP-encoded JSON or nil).
func (w *WorkflowTx) HeartbeatActivity(executionID int64, attemptID string, now, heartbeatDeadline, leaseExpires time.Time, progress, history []byte) error {
	if _, err := w.exec(qHeartbeatActivityExecution, now.UTC(), nullTime(heartbeatDeadline), string(history), now.UTC(), executionID); err != nil {
		return err
	}
	var p sql.NullString
	if progress != nil {
		p = String(string(progress))
	}
	_, err := w.exec(qHeartbeatActivityAttempt, now.UTC(), nullTime(leaseExpires), p, attemptID)
	return err
}

// ActivityExecutionOfJob reads the execution of a step job (nil when none).
func (s *Store) ActivityExecutionOfJob(ctx context.Context, jobID int64) (*ActivityExecution, error) {
	var x ActivityExecution
	err := s.db.GetContext(ctx, &x, s.query(qGetActivityExecutionByJob), jobID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read activity execution of job %d: %w", jobID, err)
	}
	return &x, nil
}

// ActivityExecutions lists a workflow's local activity executions.
func (s *Store) ActivityExecutions(ctx context.Context, workflowID int64) ([]ActivityExecution, error) {
	var out []ActivityExecution
	if err := s.db.SelectContext(ctx, &out, s.query(qActivityExecutionsOfWF), workflowID); err != nil {
		return nil, fmt.Errorf("list activity executions of workflow %d: %w", workflowID, err)
	}
	return out, nil
}

// ActivityAttempts lists a workflow's local attempts, by execution and
// attempt number.
func (s *Store) ActivityAttempts(ctx context.Context, workflowID int64) ([]ActivityAttempt, error) {
	var out []ActivityAttempt
	if err := s.db.SelectContext(ctx, &out, s.query(qActivityAttemptsOfWF), workflowID); err != nil {
		return nil, fmt.Errorf("list activity attempts of workflow %d: %w", workflowID, err)
	}
	return out, nil
}

// ActivityMetrics are the operator counts of activity work
// (durable-workflow's OperatorMetrics.activities), local beside queued.
//
// Local counts come from activity_executions (execution_mode local) and
// activity_attempts; an execution is open (pending or running) only while
// its step job is live (pending or processing). "Queued" activities are the workflow step jobs that
// run through the queue: jobs with a workflow_id, no activity execution
// (so not local) and a real handler (not a __queuety_* placeholder, which
// is orchestration rather than activity work); pending jobs are
// queued_pending, processing ones queued_running, and their failed
// attempts are their `failed` log rows. Plain jobs (no workflow) are
// reported apart as jobs_pending / jobs_running.
type ActivityMetrics struct {
	Local                int64 `json:"local"`
	LocalOpen            int64 `json:"local_open"`
	LocalPending         int64 `json:"local_pending"`
	LocalRunning         int64 `json:"local_running"`
	LocalCompleted       int64 `json:"local_completed"`
	LocalFailed          int64 `json:"local_failed"`
	LocalCancelled       int64 `json:"local_cancelled"`
	LocalAttempts        int64 `json:"local_attempts"`
	LocalFailedAttempts  int64 `json:"local_failed_attempts"`
	QueuedOpen           int64 `json:"queued_open"`
	QueuedPending        int64 `json:"queued_pending"`
	QueuedRunning        int64 `json:"queued_running"`
	QueuedFailedAttempts int64 `json:"queued_failed_attempts"`
	JobsPending          int64 `json:"jobs_pending"`
	JobsRunning          int64 `json:"jobs_running"`
}

// ActivityMetrics reads the local and queued activity counts (a few
// aggregate reads; not one snapshot, which metrics do not need).
func (s *Store) ActivityMetrics(ctx context.Context) (ActivityMetrics, error) {
	var m ActivityMetrics
	var x struct {
		Local          int64 `db:"local_total"`
		LocalOpen      int64 `db:"local_open"`
		LocalPending   int64 `db:"local_pending"`
		LocalRunning   int64 `db:"local_running"`
		LocalCompleted int64 `db:"local_completed"`
		LocalFailed    int64 `db:"local_failed"`
		LocalCancelled int64 `db:"local_cancelled"`
	}
	if err := s.db.GetContext(ctx, &x, s.query(qActivityExecutionMetrics)); err != nil {
		return m, fmt.Errorf("activity metrics: %w", err)
	}
	m.Local, m.LocalOpen, m.LocalPending, m.LocalRunning = x.Local, x.LocalOpen, x.LocalPending, x.LocalRunning
	m.LocalCompleted, m.LocalFailed, m.LocalCancelled = x.LocalCompleted, x.LocalFailed, x.LocalCancelled
	var a struct {
		Attempts int64 `db:"local_attempts"`
		Failed   int64 `db:"local_failed_attempts"`
	}
	if err := s.db.GetContext(ctx, &a, s.query(qActivityAttemptMetrics)); err != nil {
		return m, fmt.Errorf("activity attempt metrics: %w", err)
	}
	m.LocalAttempts, m.LocalFailedAttempts = a.Attempts, a.Failed
	var q struct {
		Pending int64 `db:"queued_pending"`
		Running int64 `db:"queued_running"`
	}
	if err := s.db.GetContext(ctx, &q, s.query(qQueuedStepJobMetrics)); err != nil {
		return m, fmt.Errorf("queued activity metrics: %w", err)
	}
	m.QueuedPending, m.QueuedRunning, m.QueuedOpen = q.Pending, q.Running, q.Pending+q.Running
	if err := s.db.GetContext(ctx, &m.QueuedFailedAttempts, s.query(qQueuedStepFailedAttempts)); err != nil {
		return m, fmt.Errorf("queued failed attempts: %w", err)
	}
	var p struct {
		Pending int64 `db:"jobs_pending"`
		Running int64 `db:"jobs_running"`
	}
	if err := s.db.GetContext(ctx, &p, s.query(qPlainJobMetrics)); err != nil {
		return m, fmt.Errorf("plain job metrics: %w", err)
	}
	m.JobsPending, m.JobsRunning = p.Pending, p.Running
	return m, nil
}

// PreciseNow is the app clock in UTC with its sub-second part: local
// activity deadlines are kept in DATETIME(3) columns, unlike Queuety's
// whole-second times (Now).
func (s *Store) PreciseNow() time.Time { return s.clock.Now().UTC() }

// TruncateActivities empties the local activity tables (benchmarks).
func (s *Store) TruncateActivities(ctx context.Context) error {
	for _, q := range []string{qTruncateActivityExecutions, qTruncateActivityAttempts} {
		if _, err := s.db.ExecContext(ctx, s.query(q)); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// lockedJob is a step job row with its execution's columns.
type lockedJob struct {
	JobRow
	XID               sql.NullInt64  `db:"x_id"`
	XStatus           sql.NullString `db:"x_status"`
	XAttemptCount     sql.NullInt64  `db:"x_attempt_count"`
	XCurrentAttemptID sql.NullString `db:"x_current_attempt_id"`
	XHistory          sql.NullString `db:"x_history"`
	XRetryReason      sql.NullString `db:"x_retry_reason"`
	XResult           sql.NullString `db:"x_result"`
	XLastError        sql.NullString `db:"x_last_error"`
	XSchedule         sql.NullTime   `db:"x_schedule_to_close_deadline_at"`
	XClose            sql.NullTime   `db:"x_close_deadline_at"`
	XHeartbeat        sql.NullTime   `db:"x_heartbeat_deadline_at"`
	XLastHeartbeat    sql.NullTime   `db:"x_last_heartbeat_at"`
}

// LockJobWithExecution reads and locks a local activity's step job and its
// execution in one round trip. The execution carries the columns the
// engine decides on (no options, policy or timestamps of creation); it is
// nil when none exists yet; the job is nil when missing.
func (w *WorkflowTx) LockJobWithExecution(jobID int64) (*JobRow, *ActivityExecution, error) {
	if err := w.real(); err != nil {
		return nil, nil, err
	}
	var r lockedJob
	err := w.utx.GetContext(w.ctx, &r, w.s.query(qLockJobWithExecution), jobID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lock job %d with its execution: %w", jobID, err)
	}
	job := r.JobRow
	if !r.XID.Valid {
		return &job, nil, nil
	}
	return &job, &ActivityExecution{
		ID: r.XID.Int64, JobID: jobID, Status: r.XStatus.String, AttemptCount: int(r.XAttemptCount.Int64),
		CurrentAttemptID: r.XCurrentAttemptID, History: r.XHistory, RetryReason: r.XRetryReason,
		Result: r.XResult, LastError: r.XLastError, ScheduleToCloseDeadlineAt: r.XSchedule,
		CloseDeadlineAt: r.XClose, HeartbeatDeadlineAt: r.XHeartbeat, LastHeartbeatAt: r.XLastHeartbeat,
		ExecutionMode: "local", QueueBypassed: true,
	}, nil
}

// NewRunningExecution is an execution created with its first attempt
// started (the attempt row is inserted by InsertActivityAttempt).
type NewRunningExecution struct {
	NewActivityExecution
	AttemptID                        string
	CloseDeadline, HeartbeatDeadline time.Time
}

// InsertRunningActivityExecution creates an execution already running its
// first attempt and returns its id.
func (w *WorkflowTx) InsertRunningActivityExecution(p NewRunningExecution) (int64, error) {
	now := p.Now.UTC()
	_, id, err := w.send(qInsertRunningActivityExecution, p.WorkflowID, p.StepIndex, p.JobID,
		p.ActivityType, p.AttemptID, string(p.Options), string(p.RetryPolicy), string(p.History),
		nullTime(p.ScheduleToCloseDeadline), nullTime(p.CloseDeadline), nullTime(p.HeartbeatDeadline), now, now, now)
	return id, err
}

// InsertActivityAttempt inserts a running attempt row (the execution was
// written running by the caller).
func (w *WorkflowTx) InsertActivityAttempt(p StartAttempt) error {
	return w.execChecked(qInsertActivityAttempt, nil, p.AttemptID, p.ExecutionID, p.WorkflowID, p.JobID, p.AttemptNumber,
		p.LeaseOwner, nullStr(p.RetryReason), p.Now.UTC(), nullTime(p.LeaseExpires))
}

// CompleteActivity closes the running attempt and completes the execution
// with its result in one statement; false when the attempt was not
// running.
func (w *WorkflowTx) CompleteActivity(executionID int64, result, history []byte, now time.Time) (bool, error) {
	n, err := w.exec(qCompleteActivityAttemptAndExecution, string(result), string(history), now.UTC(), now.UTC(), now.UTC(), executionID)
	return n > 0, err
}
