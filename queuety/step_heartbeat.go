package queuety

import "context"

// stepJobKey carries the attempt of the workflow step job a context runs.
type stepJobKey struct{}

// withStepJob gives a step's context its attempt, for StepHeartbeat.
func withStepJob(ctx context.Context, j *Job) context.Context {
	return context.WithValue(ctx, stepJobKey{}, j)
}

// StepHeartbeat is Heartbeat::beat for the workflow step running in ctx,
// as the plugin's worker stores it for steps too: it refreshes the step
// job's reserved_at and stores progress (any value JSON can encode, or
// nil for none) in its heartbeat_data, fenced on the attempt like
// Job.Heartbeat. It returns ErrJobLost, and cancels the step's context
// with it, when the attempt no longer holds the row. Outside a step run
// by a worker it does nothing and returns nil, as beat() does outside a
// job. The PHP pool relays PHP steps' Heartbeat::beat() through it.
func StepHeartbeat(ctx context.Context, progress any) error {
	j, _ := ctx.Value(stepJobKey{}).(*Job)
	if j == nil {
		return nil
	}
	return j.Heartbeat(ctx, progress)
}
