package workflow

import (
	"database/sql"
	"time"
)

// Dispatch is everything dispatching a workflow writes, as plain data, in
// the order Queuety writes it in one transaction:
//
//  1. with an IdempotencyKey, look the key up in workflow_dispatch_keys and
//     return the existing workflow id if found;
//  2. insert Workflow into workflows (status 'running', current_step 0);
//  3. with an IdempotencyKey, insert (key, workflow id) into
//     workflow_dispatch_keys (a duplicate-key error means another dispatch
//     won: roll back and return its id);
//  4. insert Jobs (the first step's jobs) with the new workflow id;
//  5. log workflow_started (handler = Workflow.Name, queue = Queue).
type Dispatch struct {
	Workflow NewWorkflow
	Jobs     []StepJob
	// IdempotencyKey is "" when the dispatch is not idempotent.
	IdempotencyKey string
	// Queue is the workflow's queue, the queue of its workflow_started log.
	Queue string
}

// NewWorkflow is the workflows row a dispatch inserts.
type NewWorkflow struct {
	Name string
	// State is the exact state column (PHP json_encode bytes).
	State      []byte
	TotalSteps int
	// ParentWorkflowID and ParentStepIndex are set only for run_workflow
	// children.
	ParentWorkflowID sql.NullInt64
	ParentStepIndex  sql.NullInt64
	// DeadlineSeconds is set when the workflow has a deadline (even of 0
	// seconds, from the builder); deadline_at is computed at insert time.
	DeadlineSeconds sql.NullInt64
}

// dateTimeLayout is MySQL's DATETIME text, as PHP's gmdate('Y-m-d H:i:s').
const dateTimeLayout = "2006-01-02 15:04:05"

// DeadlineAt returns the deadline_at column for a dispatch at now: UTC
// now + DeadlineSeconds, or NULL.
func (w NewWorkflow) DeadlineAt(now time.Time) sql.NullString {
	if !w.DeadlineSeconds.Valid {
		return sql.NullString{}
	}
	at := now.UTC().Truncate(time.Second).Add(time.Duration(w.DeadlineSeconds.Int64) * time.Second)
	return sql.NullString{String: at.Format(dateTimeLayout), Valid: true}
}
