package queuety

import (
	store "github.com/queuety-go/queuety/sql"
)

// notifyCompleted sends job.completed for the completions a batch wrote:
// plain jobs only, not workflow steps nor state machine actions.
func (r *recorder) notifyCompleted(batch []store.Completion, res store.CompleteResult) {
	// The common case, no job.completed hook: nothing to build per job.
	if !r.Hooks.Wants(WebhookJobCompleted) {
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
			r.Hooks.JobCompleted(id, c.Log.Handler, c.Log.Queue, c.Log.DurationMS.Int64)
		}
	}
}

// notifyFailure sends job.failed or job.buried for a written failure of a
// plain job, as the written failure decided (a job class's $tries
// included).
func (r *recorder) notifyFailure(rj *running, o *outcome, buried bool) {
	if r.Hooks == nil {
		return
	}
	r.Hooks.JobFailure(&rj.row, o.err.Error(), buried)
}
