package queuety

import (
	"context"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The worker's webhook events, with the data the plugin's worker sends for
// each: job.completed for plain jobs (not workflow steps, not state
// machine actions), job.failed on a retried failure, job.buried on a
// burial, and workflow.failed after a step's burial failed its workflow.
// Each is queued once its rows are written; stale recovery sends none, as
// in the plugin.

// setupWebhooks builds the worker's notifier (unless Config.Webhooks
// disables it) and has the workflow engine report step failures to it.
func (w *Worker) setupWebhooks() {
	if w.cfg.Webhooks.Disabled {
		return
	}
	w.hooks = newWebhookNotifier(w.store, w.cfg.Webhooks, w.log, w.cfg.Clock, w.cfg.Observer)
}

// stopWebhooks drains the notifier within what is left of the shutdown
// grace, and at least one request timeout, so the last jobs' webhooks get
// their try.
func (w *Worker) stopWebhooks(grace context.Context) {
	if w.hooks == nil {
		return
	}
	ctx := grace
	if dl, ok := grace.Deadline(); !ok || time.Until(dl) < w.cfg.Webhooks.Timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), w.cfg.Webhooks.Timeout)
		defer cancel()
	}
	w.hooks.Stop(ctx)
}

// notifyCompleted sends job.completed for the completions a batch wrote.
func (w *Worker) notifyCompleted(batch []store.Completion, res store.CompleteResult) {
	// The common case, no job.completed hook: nothing to build per job.
	if !w.hooks.wants(WebhookJobCompleted) {
		return
	}
	byID := make(map[int64]*store.Completion, len(batch))
	for i := range batch {
		byID[batch[i].ID] = &batch[i]
	}
	for _, ids := range [][]int64{res.Completed, res.Already} {
		for _, id := range ids {
			c, ok := byID[id]
			if !ok || c.Log.Handler == MachineActionHandler || c.Log.WorkflowID.Valid {
				continue
			}
			data := phpjson.NewObject()
			data.Set("job_id", phpjson.Int(id))
			data.Set("handler", phpjson.String(c.Log.Handler))
			data.Set("queue", phpjson.String(c.Log.Queue))
			data.Set("duration_ms", phpjson.Int(c.Log.DurationMS.Int64))
			w.hooks.notify(WebhookJobCompleted, data)
		}
	}
}

// notifyFailure sends job.failed or job.buried for a written failure of a
// plain job, as the written failure decided (a job class's $tries
// included).
func (w *Worker) notifyFailure(rj *running, o *outcome, buried bool) {
	if w.hooks == nil {
		return
	}
	w.hooks.jobFailure(&rj.row, o.err.Error(), buried)
}

// jobFailure is the data of job.failed (with attempt) or job.buried.
func (n *webhookNotifier) jobFailure(row *store.JobRow, message string, buried bool) {
	data := phpjson.NewObject()
	data.Set("job_id", phpjson.Int(row.ID))
	data.Set("handler", phpjson.String(row.Handler))
	data.Set("queue", phpjson.String(row.Queue))
	message = validUTF8(message)
	event := WebhookJobBuried
	if !buried {
		event = WebhookJobFailed
		data.Set("attempt", phpjson.Int(int64(row.Attempts)))
	}
	data.Set("error_message", phpjson.String(message))
	n.notify(event, data)
}

// stepFailure is the engine's report of a failed step attempt.
func (n *webhookNotifier) stepFailure(f workflow.StepFailure) {
	n.jobFailure(&f.Job, f.Message, f.Buried)
	if !f.WorkflowFailed {
		return
	}
	data := phpjson.NewObject()
	data.Set("workflow_id", phpjson.Int(f.Job.WorkflowID.Int64))
	data.Set("job_id", phpjson.Int(f.Job.ID))
	data.Set("handler", phpjson.String(f.Job.Handler))
	data.Set("error_message", phpjson.String(validUTF8(f.Message)))
	n.notify(WebhookWorkflowFailed, data)
}

// validUTF8 is a message as the logs row stores it: invalid UTF-8 as
// U+FFFD (sql/fit.go), so the body always encodes; json_encode would throw
// on it inside the plugin's catch block.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
