package workflow

import (
	"bytes"
	"encoding/json"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StatusReport is Queuety's WorkflowState (Queuety::workflow_status, spec
// §8) plus the row's step type, timestamps and error. JSON field names are
// the PHP property names; absent values are null.
type StatusReport struct {
	WorkflowID  int64  `json:"workflow_id"`
	Name        string `json:"name"`
	Status      Status `json:"status"`
	CurrentStep int    `json:"current_step"`
	TotalSteps  int    `json:"total_steps"`
	// State is the public state (no "_" keys).
	State            phpjson.Value `json:"state"`
	ParentWorkflowID *int64        `json:"parent_workflow_id"`
	ParentStepIndex  *int64        `json:"parent_step_index"`
	// WaitType is _wait.type ("signal", "workflow") or "wait_for_signal"
	// for the legacy _waiting_for_signal.
	WaitType   *string  `json:"wait_type"`
	WaitingFor []string `json:"waiting_for"`
	// DefinitionVersion, DefinitionHash, IdempotencyKey: reserved keys.
	DefinitionVersion *string `json:"definition_version"`
	DefinitionHash    *string `json:"definition_hash"`
	IdempotencyKey    *string `json:"idempotency_key"`
	// Budget is null, or the limits plus transitions, cost_units,
	// started_workflows and public_state_bytes.
	Budget          phpjson.Value `json:"budget"`
	CurrentStepName *string       `json:"current_step_name"`
	WaitMode        *string       `json:"wait_mode"`
	// WaitDetails are the live details of the wait (matched, remaining,
	// failed, step_name, result_key, quorum, group_key, ...); null when not
	// waiting or in lists.
	WaitDetails   phpjson.Value `json:"wait_details"`
	ArtifactCount *int          `json:"artifact_count"`
	ArtifactKeys  []string      `json:"artifact_keys"`

	// Go additions: the current step's type, the row's timestamps (UTC,
	// "YYYY-MM-DD HH:MM:SS") and error.
	CurrentStepType *string `json:"current_step_type"`
	StartedAt       string  `json:"started_at"`
	CompletedAt     *string `json:"completed_at"`
	FailedAt        *string `json:"failed_at"`
	DeadlineAt      *string `json:"deadline_at"`
	ErrorMessage    *string `json:"error_message"`
	// LocalActivities are the workflow's local activity executions with
	// execution_mode, local_activity and their attempts (WorkflowStatus
	// only; omitted when there are none).
	LocalActivities []LocalActivityView `json:"local_activities,omitempty"`
	// Corrupt says why the stored state cannot be read (not JSON, nested
	// too deep, not an object); omitted for a readable row. A corrupt row
	// is still reported, with its status as stored and a null state, so
	// one bad row never hides the others from a list.
	Corrupt string `json:"corrupt,omitempty"`
}

// ExportVersion is written as queuety_version in exports: the plugin
// version whose rows this daemon reads and writes.
const ExportVersion = "0.22.0"

// TimelineEvent is one workflow_events row, JSON columns decoded (null
// when NULL), as WorkflowEventLog::get_timeline returns them.
type TimelineEvent struct {
	ID            int64         `json:"id"`
	WorkflowID    int64         `json:"workflow_id"`
	JobID         *int64        `json:"job_id"`
	ParentEventID *int64        `json:"parent_event_id"`
	StepIndex     int           `json:"step_index"`
	StepName      *string       `json:"step_name"`
	StepType      *string       `json:"step_type"`
	Handler       string        `json:"handler"`
	Event         string        `json:"event"`
	Queue         *string       `json:"queue"`
	Attempt       *int64        `json:"attempt"`
	Input         phpjson.Value `json:"input"`
	Output        phpjson.Value `json:"output"`
	StateBefore   phpjson.Value `json:"state_before"`
	StateAfter    phpjson.Value `json:"state_after"`
	Context       phpjson.Value `json:"context"`
	Artifacts     phpjson.Value `json:"artifacts"`
	Chunks        phpjson.Value `json:"chunks"`
	Error         phpjson.Value `json:"error"`
	DurationMS    *int64        `json:"duration_ms"`
	CreatedAt     string        `json:"created_at"`
	// Local activity events (context.local_activity true): execution_mode
	// "local", local_activity true and the durable-workflow event name
	// (ActivityStarted, ...); omitted for every other event.
	ExecutionMode *string `json:"execution_mode,omitempty"`
	LocalActivity bool    `json:"local_activity,omitempty"`
	ActivityEvent string  `json:"activity_event,omitempty"`
}

// ExportJSON is WorkflowExporter::export_json: the export pretty-printed
// with four spaces and unescaped slashes.
func ExportJSON(doc *phpjson.Object) ([]byte, error) {
	b, err := phpjson.Encode(phpjson.ObjectValue(doc))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, phpjson.UnescapeSlashes(b), "", "    "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Artifact is one stored artifact, as ArtifactStore::get returns it.
type Artifact struct {
	ID         int64         `json:"id"`
	WorkflowID int64         `json:"workflow_id"`
	Key        string        `json:"key"`
	Kind       string        `json:"kind"`
	StepIndex  *int64        `json:"step_index"`
	Metadata   phpjson.Value `json:"metadata"`
	CreatedAt  string        `json:"created_at"`
	UpdatedAt  string        `json:"updated_at"`
	// Content is the decoded JSON for kind "json", else the stored string.
	Content phpjson.Value `json:"content"`
}

// Why a live workflow can never finish as it is (StuckWorkflow.Kind).
const (
	StuckStateCorrupt       = "workflow_state_corrupt"
	StuckStepsShort         = "workflow_steps_short"
	StuckCurrentStepMissing = "workflow_current_step_missing"
)

// StuckKinds describes each kind for a summary.
var StuckKinds = map[string]string{
	StuckStateCorrupt:       "live workflow whose state cannot be read (not JSON, nested too deep, not an object)",
	StuckStepsShort:         "live workflow whose _steps has fewer usable steps than total_steps",
	StuckCurrentStepMissing: "live workflow whose current step is missing from _steps: no job will ever run it",
}

// StuckWorkflow is a live workflow that can never finish as it is.
type StuckWorkflow struct {
	ID     int64  `json:"workflow_id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// Queue is the state's _queue ("default" when unreadable).
	Queue  string `json:"queue"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	// Checked is how many waiting workflows were re-evaluated; Settled how
	// many of them (and of stuck run_workflow parents) moved on or failed.
	Checked, Settled int
}

// LocalActivityView is one local activity execution as status and export
// show it (durable-workflow's RunActivityView / HistoryExport.activities).
type LocalActivityView struct {
	ID                        int64                  `json:"id"`
	StepIndex                 int                    `json:"step_index"`
	JobID                     int64                  `json:"workflow_task_id"`
	ActivityType              string                 `json:"activity_type"`
	ExecutionMode             string                 `json:"execution_mode"`
	LocalActivity             bool                   `json:"local_activity"`
	QueueBypassed             bool                   `json:"queue_bypassed"`
	Status                    string                 `json:"status"`
	AttemptCount              int                    `json:"attempt_count"`
	ActivityOptions           phpjson.Value          `json:"activity_options"`
	RetryPolicy               phpjson.Value          `json:"retry_policy"`
	Result                    phpjson.Value          `json:"result"`
	LastError                 *string                `json:"last_error"`
	TimeoutKind               *string                `json:"timeout_kind"`
	ScheduleToCloseDeadlineAt *string                `json:"schedule_to_close_deadline_at"`
	StartedAt                 *string                `json:"started_at"`
	ClosedAt                  *string                `json:"closed_at"`
	Attempts                  []LocalActivityAttempt `json:"attempts"`
	// History is the execution's activity history: {event, recorded_at,
	// payload[, exception]} entries, event being ActivityScheduled,
	// ActivityStarted, ActivityHeartbeatRecorded, ...
	History phpjson.Value `json:"history"`
}

// LocalActivityAttempt is one attempt in a LocalActivityView.
type LocalActivityAttempt struct {
	ID             string        `json:"id"`
	AttemptNumber  int           `json:"attempt_number"`
	Status         string        `json:"status"`
	RetryReason    *string       `json:"retry_reason"`
	TimeoutKind    *string       `json:"timeout_kind"`
	LeaseOwner     *string       `json:"lease_owner"`
	ErrorMessage   *string       `json:"error_message"`
	ErrorClass     *string       `json:"error_class"`
	Progress       phpjson.Value `json:"progress"`
	StartedAt      string        `json:"started_at"`
	LastHeartbeat  *string       `json:"last_heartbeat_at"`
	LeaseExpiresAt *string       `json:"lease_expires_at"`
	ClosedAt       *string       `json:"closed_at"`
}

// Workflow event names (workflow_events.event).
const (
	EventStepStarted         = "step_started"
	EventStepCompleted       = "step_completed"
	EventStepFailed          = "step_failed"
	EventStepBranchCompleted = "step_branch_completed"
	EventStepItemCompleted   = "step_item_completed"
)

// Local activity history events: durable-workflow's activity event names.
// Each execution keeps its full history (activity_executions.history). The
// plugin's workflow_events.event is an ENUM of Queuety's names, so the
// events with a Queuety counterpart are also written there, with the
// markers and the activity_event name in their context: ActivityStarted as
// step_started, ActivityCompleted as step_completed, and
// ActivityRetryScheduled, ActivityFailed, ActivityTimedOut and
// ActivityCancelled as step_failed (Queuety writes step_failed for every
// failed attempt, retried or not).
const (
	ActivityScheduled         = "ActivityScheduled"
	ActivityStarted           = "ActivityStarted"
	ActivityHeartbeatRecorded = "ActivityHeartbeatRecorded"
	ActivityRetryScheduled    = "ActivityRetryScheduled"
	ActivityCompleted         = "ActivityCompleted"
	ActivityFailed            = "ActivityFailed"
	ActivityTimedOut          = "ActivityTimedOut"
	ActivityCancelled         = "ActivityCancelled"
)
