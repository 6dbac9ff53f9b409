package queuety

import (
	"context"
	"time"
)

// leftToPHPDelay is how long a step given back for PHP workers stays out
// of this worker's claims: PHP workers poll every second or so and take it
// meanwhile; if none does, this worker claims it again then and gives it
// back again, writing nothing each time.
const leftToPHPDelay = 30 * time.Second

// leaveToPHP gives back a claimed step the engine refused to run because
// only PHP can (workflow.ErrNeedsPHP: a repeat with a PHP condition class
// and no PHP pool): the attempt restored, the row as PHP workers expect it.
func (r *recorder) leaveToPHP(ctx context.Context, rj *running, why error) {
	err := r.Writes.persist(ctx, "leave to PHP", func(ctx context.Context) error {
		_, err := r.Store.ReleaseJobLater(ctx, rj.job.attempt, time.Now().Add(leftToPHPDelay))
		return err
	})
	if err != nil {
		r.Log.Error("giving a step back to PHP workers failed; the stale sweep will recover it", "job", rj.row.ID, "err", err)
		return
	}
	r.Stats.handedBack.Add(1)
	r.Log.Info("workflow step left to PHP workers", "job", rj.row.ID, "workflow", rj.row.WorkflowID.Int64, "handler", rj.row.Handler, "reason", why)
}
