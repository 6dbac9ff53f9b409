package queuety

import "context"

// RetryBuriedJobs puts the listed jobs that are still buried back to
// pending now, as RetryBuried does for a queue; it returns how many
// moved (a job retried or deleted meanwhile is left alone).
func (c *Client) RetryBuriedJobs(ctx context.Context, ids []int64) (int, error) {
	return c.store.RetryBuriedIDs(ctx, ids)
}
