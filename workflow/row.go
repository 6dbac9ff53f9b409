package workflow

import (
	"database/sql"
	"time"
)

// Row is one row of the workflows table, column for column as Queuety
// creates it (Schema::install). The db tags fit sqlx; the store that reads
// and writes rows comes with the advance transaction.
type Row struct {
	ID     int64  `db:"id"`
	Name   string `db:"name"`
	Status Status `db:"status"`
	// State is the state column as stored; ParseState reads it.
	State []byte `db:"state"`
	// CurrentStep is the step being run or waited on; it equals
	// TotalSteps once the workflow completed.
	CurrentStep int `db:"current_step"`
	// TotalSteps is count(_steps) at dispatch (TINYINT UNSIGNED: ≤ 255).
	TotalSteps int `db:"total_steps"`
	// ParentWorkflowID and ParentStepIndex are set only on run_workflow
	// children; start_workflows children are top-level rows.
	ParentWorkflowID sql.NullInt64 `db:"parent_workflow_id"`
	ParentStepIndex  sql.NullInt64 `db:"parent_step_index"`
	StartedAt        time.Time     `db:"started_at"`
	// CompletedAt is also set on cancel.
	CompletedAt  sql.NullTime   `db:"completed_at"`
	FailedAt     sql.NullTime   `db:"failed_at"`
	ErrorMessage sql.NullString `db:"error_message"`
	// DeadlineAt is fixed at dispatch (UTC) and never extended.
	DeadlineAt sql.NullTime `db:"deadline_at"`
}

// ParseState decodes the row's state column.
func (r *Row) ParseState() (*State, error) { return ParseState(r.State) }
