package store

import (
	"database/sql"
	"time"
)

// Job statuses, exactly Queuety's JobStatus enum. Workers never write
// StatusFailed: terminal failure is StatusBuried.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusBuried     = "buried"
)

// Statuses lists the five job statuses in Queuety's order.
var Statuses = []string{StatusPending, StatusProcessing, StatusCompleted, StatusFailed, StatusBuried}

// Log events written by the job runtime (Queuety's LogEvent).
const (
	EventStarted   = "started"
	EventCompleted = "completed"
	EventFailed    = "failed"
	EventBuried    = "buried"
	EventRetried   = "retried"
)

// JobRow is one row of the jobs table. Claims fill only the columns a worker
// needs; reads by id fill them all.
type JobRow struct {
	ID               int64          `db:"id" json:"id"`
	Queue            string         `db:"queue" json:"queue"`
	Handler          string         `db:"handler" json:"handler"`
	Payload          string         `db:"payload" json:"payload"`
	PayloadHash      sql.NullString `db:"payload_hash" json:"-"`
	Priority         int            `db:"priority" json:"priority"`
	Status           string         `db:"status" json:"status"`
	Attempts         int            `db:"attempts" json:"attempts"`
	MaxAttempts      int            `db:"max_attempts" json:"max_attempts"`
	AvailableAt      time.Time      `db:"available_at" json:"available_at"`
	ReservedAt       sql.NullTime   `db:"reserved_at" json:"-"`
	CompletedAt      sql.NullTime   `db:"completed_at" json:"-"`
	FailedAt         sql.NullTime   `db:"failed_at" json:"-"`
	ErrorMessage     sql.NullString `db:"error_message" json:"-"`
	WorkflowID       sql.NullInt64  `db:"workflow_id" json:"-"`
	StepIndex        sql.NullInt64  `db:"step_index" json:"-"`
	DependsOn        sql.NullInt64  `db:"depends_on" json:"-"`
	BatchID          sql.NullInt64  `db:"batch_id" json:"-"`
	ConcurrencyGroup sql.NullString `db:"concurrency_group" json:"-"`
	ConcurrencyLimit sql.NullInt64  `db:"concurrency_limit" json:"-"`
	CostUnits        int64          `db:"cost_units" json:"cost_units"`
	HeartbeatData    sql.NullString `db:"heartbeat_data" json:"-"`
	CreatedAt        time.Time      `db:"created_at" json:"created_at"`
	ReservedBy       sql.NullString `db:"reserved_by" json:"-"`
	// SessionID and WorkerSession bind the job to a worker session.
	SessionID     sql.NullString `db:"session_id" json:"-"`
	WorkerSession sql.NullString `db:"worker_session" json:"-"`
	// SessionPending is a virtual column (session_id while pending); read
	// only so SELECT * maps.
	SessionPending sql.NullString `db:"session_pending" json:"-"`
	// SessionProcessing is a virtual column (session_id while processing);
	// read only so SELECT * maps.
	SessionProcessing sql.NullString `db:"session_processing" json:"-"`
}

// HeldBy reports whether attempt a holds the job as read: processing,
// reserved by a's worker, at a's attempt number.
func (j *JobRow) HeldBy(a Attempt) bool {
	return j.Status == StatusProcessing && j.ReservedBy.Valid && j.ReservedBy.String == a.WorkerID && j.Attempts == a.Attempt
}

// LogRow is one row of the logs table.
type LogRow struct {
	ID           int64          `db:"id"`
	JobID        sql.NullInt64  `db:"job_id"`
	WorkflowID   sql.NullInt64  `db:"workflow_id"`
	StepIndex    sql.NullInt64  `db:"step_index"`
	Handler      string         `db:"handler"`
	Queue        string         `db:"queue"`
	Event        string         `db:"event"`
	Attempt      sql.NullInt64  `db:"attempt"`
	DurationMS   sql.NullInt64  `db:"duration_ms"`
	MemoryPeakKB sql.NullInt64  `db:"memory_peak_kb"`
	ErrorMessage sql.NullString `db:"error_message"`
	ErrorClass   sql.NullString `db:"error_class"`
	ErrorTrace   sql.NullString `db:"error_trace"`
	Context      sql.NullString `db:"context"`
	CreatedAt    time.Time      `db:"created_at"`
}

// LogFor starts a log row with the job columns every job event carries.
func LogFor(j *JobRow, event string) LogRow {
	return LogRow{
		JobID:      sql.NullInt64{Int64: j.ID, Valid: true},
		WorkflowID: j.WorkflowID,
		StepIndex:  j.StepIndex,
		Handler:    j.Handler,
		Queue:      j.Queue,
		Event:      event,
	}
}

// Int is a valid sql.NullInt64.
func Int(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: true} }

// String is a valid sql.NullString.
func String(v string) sql.NullString { return sql.NullString{String: v, Valid: true} }
