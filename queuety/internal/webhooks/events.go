package webhooks

import (
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// The worker's webhook events, with the data the plugin's worker sends for
// each: job.completed for plain jobs (not workflow steps, not state
// machine actions), job.failed on a retried failure, job.buried on a
// burial, and workflow.failed after a step's burial failed its workflow.
// Each is queued once its rows are written; stale recovery sends none, as
// in the plugin.

// JobCompleted sends job.completed for one written completion.
func (n *Notifier) JobCompleted(jobID int64, handler, queue string, durationMS int64) {
	data := phpjson.NewObject()
	data.Set("job_id", phpjson.Int(jobID))
	data.Set("handler", phpjson.String(handler))
	data.Set("queue", phpjson.String(queue))
	data.Set("duration_ms", phpjson.Int(durationMS))
	n.Notify(JobCompleted, data)
}

// JobFailure sends job.failed (with attempt) or job.buried for a written
// failure of row.
func (n *Notifier) JobFailure(row *store.JobRow, message string, buried bool) {
	if n == nil {
		return
	}
	data := phpjson.NewObject()
	data.Set("job_id", phpjson.Int(row.ID))
	data.Set("handler", phpjson.String(row.Handler))
	data.Set("queue", phpjson.String(row.Queue))
	message = validUTF8(message)
	event := JobBuried
	if !buried {
		event = JobFailed
		data.Set("attempt", phpjson.Int(int64(row.Attempts)))
	}
	data.Set("error_message", phpjson.String(message))
	n.Notify(event, data)
}

// StepFailure is a failed step attempt as the workflow engine reports it
// (its EngineConfig.OnStepFailure): the same fields, converted by the
// composition root, since this package sits below the engine's users and
// does not import the engine.
type StepFailure struct {
	Job            store.JobRow
	Message        string
	Buried         bool
	WorkflowFailed bool
}

// StepFailure sends job.failed or job.buried for a failed step attempt,
// then workflow.failed when it failed the workflow.
func (n *Notifier) StepFailure(f StepFailure) {
	n.JobFailure(&f.Job, f.Message, f.Buried)
	if !f.WorkflowFailed {
		return
	}
	data := phpjson.NewObject()
	data.Set("workflow_id", phpjson.Int(f.Job.WorkflowID.Int64))
	data.Set("job_id", phpjson.Int(f.Job.ID))
	data.Set("handler", phpjson.String(f.Job.Handler))
	data.Set("error_message", phpjson.String(validUTF8(f.Message)))
	n.Notify(WorkflowFailed, data)
}

// validUTF8 is a message as the logs row stores it: invalid UTF-8 as
// U+FFFD (sql/fit.go), so the body always encodes; json_encode would throw
// on it inside the plugin's catch block.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
