package workflow

import (
	"fmt"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Priority is Queuety's Priority enum (Enums/Priority.php). The state stores
// it as an int under _priority and jobs.priority holds the same int.
type Priority int

// Priorities, as in Queuety. The builder's default is PriorityLow.
const (
	PriorityLow    Priority = 0
	PriorityNormal Priority = 1
	PriorityHigh   Priority = 2
	PriorityUrgent Priority = 3
)

var priorityNames = [...]string{"low", "normal", "high", "urgent"}

// Valid reports whether p is one of the four enum cases; Priority::from
// throws for anything else.
func (p Priority) Valid() bool { return p >= PriorityLow && p <= PriorityUrgent }

func (p Priority) String() string {
	if p.Valid() {
		return priorityNames[p]
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// ParsePriority reads the names serialized step definitions may use
// ("low", "normal", "high", "urgent", with what PHP's trim() strips around
// them ignored, as StepDispatchOptions::priority_value does).
func ParsePriority(s string) (Priority, bool) {
	switch phpjson.Trim(s) {
	case "low":
		return PriorityLow, true
	case "normal":
		return PriorityNormal, true
	case "high":
		return PriorityHigh, true
	case "urgent":
		return PriorityUrgent, true
	}
	return 0, false
}

// WaitMode is Queuety's WaitMode enum, stored as its string value in the
// wait_mode of signal and workflow waits and in _wait.
type WaitMode string

// Wait modes. Signal waits accept only WaitAll and WaitAny.
const (
	WaitAll    WaitMode = "all"
	WaitAny    WaitMode = "any"
	WaitQuorum WaitMode = "quorum"
)

// parseWaitMode mirrors WaitMode::tryFrom(...) ?? WaitMode::All, the way the
// runtime reads wait_mode: anything unknown waits for all.
func parseWaitMode(s string) WaitMode {
	switch m := WaitMode(s); m {
	case WaitAll, WaitAny, WaitQuorum:
		return m
	}
	return WaitAll
}

// ForEachMode is Queuety's ForEachMode enum, the completion rule of a
// for_each step.
type ForEachMode string

// For-each modes.
const (
	ForEachAll          ForEachMode = "all"
	ForEachFirstSuccess ForEachMode = "first_success"
	ForEachQuorum       ForEachMode = "quorum"
)

// RepeatMode is the repeat_mode of a repeat step. Queuety has no enum for
// it; the builder writes these two strings.
type RepeatMode string

// Repeat modes: "while" jumps back while the condition matches, "until"
// jumps back until it matches.
const (
	RepeatWhile RepeatMode = "while"
	RepeatUntil RepeatMode = "until"
)

// HumanWait marks the signal waits the builder's human helpers create; it
// is stored in the step's human_wait and shown in wait details.
type HumanWait string

// Human wait kinds; "" means a plain signal wait (human_wait null).
const (
	HumanWaitApproval HumanWait = "approval"
	HumanWaitDecision HumanWait = "decision"
	HumanWaitInput    HumanWait = "input"
)

// Status is Queuety's WorkflowStatus enum: the workflows.status column.
type Status string

// Workflow statuses.
const (
	StatusRunning             Status = "running"
	StatusCompleted           Status = "completed"
	StatusFailed              Status = "failed"
	StatusPaused              Status = "paused"
	StatusWaitingForSignal    Status = "waiting_for_signal"
	StatusWaitingForWorkflows Status = "waiting_for_workflows"
	StatusCancelled           Status = "cancelled"
)

// StepType is the "type" of a _steps entry.
type StepType string

// Step types the runtime knows. A legacy string entry, a missing type and a
// type the runtime does not recognise all run as a single step.
const (
	StepSingle           StepType = "single"
	StepParallel         StepType = "parallel"
	StepForEach          StepType = "for_each"
	StepRepeat           StepType = "repeat"
	StepRunWorkflow      StepType = "run_workflow"
	StepDelay            StepType = "delay"
	StepWaitForSignal    StepType = "wait_for_signal"
	StepWaitForWorkflows StepType = "wait_for_workflows"
	StepStartWorkflows   StepType = "start_workflows"
)

// Placeholder handlers: the jobs.handler of the job that drives each
// orchestration step. They are engine work, not user handlers.
const (
	HandlerForEach          = "__queuety_for_each"
	HandlerRunWorkflow      = "__queuety_run_workflow"
	HandlerStartWorkflows   = "__queuety_start_workflows"
	HandlerDelay            = "__queuety_delay"
	HandlerWaitForSignal    = "__queuety_wait_for_signal"
	HandlerWaitForWorkflows = "__queuety_wait_for_workflows"
	HandlerRepeat           = "__queuety_repeat"
)

// placeholderHandlers maps each orchestration step type to its placeholder.
var placeholderHandlers = map[StepType]string{
	StepForEach:          HandlerForEach,
	StepRunWorkflow:      HandlerRunWorkflow,
	StepStartWorkflows:   HandlerStartWorkflows,
	StepDelay:            HandlerDelay,
	StepWaitForSignal:    HandlerWaitForSignal,
	StepWaitForWorkflows: HandlerWaitForWorkflows,
	StepRepeat:           HandlerRepeat,
}

// IsPlaceholderHandler reports whether handler is one of Queuety's
// __queuety_* placeholders (which no PHP class and no Go handler backs).
func IsPlaceholderHandler(handler string) bool {
	return strings.HasPrefix(handler, "__queuety_")
}

// IsLive reports whether a workflow status is running or paused (a step
// may still settle).
func IsLive(status string) bool {
	return status == string(StatusRunning) || status == string(StatusPaused)
}

// IsCompletable reports whether a job status is pending or processing.
func IsCompletable(status string) bool {
	return status == store.StatusPending || status == store.StatusProcessing
}
