package workflow

import "context"

// afterTerminal runs after a transaction in which workflows became terminal
// (completed, failed, cancelled, deadline exceeded) has committed: it wakes
// what waits on them, as Queuety's on_workflow_completed and
// reconcile_waiting_for_workflows_for_dependency do. Every terminal
// transition calls it post-commit. (The wake-ups are being implemented with
// the waits; until then it does nothing.)
func (e *Engine) afterTerminal(ctx context.Context, workflowIDs ...int64) {}
