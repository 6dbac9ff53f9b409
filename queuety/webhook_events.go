package queuety

import (
	store "github.com/queuety-go/queuety/sql"
)

// setupWebhooks builds the worker's notifier (unless Config.Webhooks
// disables it), which the workflow engine reports step failures to.
func (w *Worker) setupWebhooks() {
	if w.cfg.Webhooks.Disabled {
		return
	}
	w.hooks = newWebhookNotifier(w.store, w.cfg, w.log)
}

// notifyCompleted sends job.completed for the completions a batch wrote:
// plain jobs only, not workflow steps nor state machine actions.
func (w *Worker) notifyCompleted(batch []store.Completion, res store.CompleteResult) {
	// The common case, no job.completed hook: nothing to build per job.
	if !w.hooks.Wants(WebhookJobCompleted) {
		return
	}
	byID := make(map[int64]*store.Completion, len(batch))
	for i := range batch {
		byID[batch[i].ID] = &batch[i]
	}
	for _, ids := range [][]int64{res.Completed, res.Already} {
		for _, id := range ids {
			c, ok := byID[id]
			if !ok || c.Log.Handler == machineActionHandler || c.Log.WorkflowID.Valid {
				continue
			}
			w.hooks.JobCompleted(id, c.Log.Handler, c.Log.Queue, c.Log.DurationMS.Int64)
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
	w.hooks.JobFailure(&rj.row, o.err.Error(), buried)
}
