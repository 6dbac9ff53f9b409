package store

import (
	"context"
	"fmt"
	"time"
)

// EventDebug is the logs.event of QUEUETY_DEBUG rows.
const EventDebug = "debug"

// Lock kinds for lockNamed: a prefix no concurrency group name can start
// with unless it means to, kept apart by a NUL.
const (
	lockRate      = "rate\x00"
	lockQueueCost = "queue-cost\x00"
	lockGroupCost = "group-cost\x00"
)

// LockRates locks the rate-limit admission of handlers (see LockGroups);
// it returns the handlers it locked within timeout.
func (c *ClaimTx) LockRates(ctx context.Context, handlers []string, timeout time.Duration) ([]string, error) {
	return c.lockNamed(ctx, lockRate, handlers, timeout)
}

// LockQueueCosts locks the cost-budget admission of queues.
func (c *ClaimTx) LockQueueCosts(ctx context.Context, queues []string, timeout time.Duration) ([]string, error) {
	return c.lockNamed(ctx, lockQueueCost, queues, timeout)
}

// LockGroupCosts locks the cost-budget admission of concurrency groups.
func (c *ClaimTx) LockGroupCosts(ctx context.Context, groups []string, timeout time.Duration) ([]string, error) {
	return c.lockNamed(ctx, lockGroupCost, groups, timeout)
}

// RateLimitUsed is how much of a handler's rate limit the last window
// used: its completed log rows since now - window and its processing jobs,
// plus the slots kept for its rows ahead of first, the claim's first row of
// the handler, that a concurrent claim holds.
func (c *ClaimTx) RateLimitUsed(ctx context.Context, first *JobRow, window int64) (int, error) {
	var n int
	handler := first.Handler
	if err := c.tx.GetContext(ctx, &n, c.s.query(qRateLimitUsed), handler, window, handler,
		handler, first.Queue, first.Priority, first.Priority, first.ID); err != nil {
		return 0, fmt.Errorf("rate limit of %s: %w", handler, err)
	}
	return n, nil
}

// QueueCostProcessing sums the cost_units of a queue's processing jobs.
func (c *ClaimTx) QueueCostProcessing(ctx context.Context, queue string) (int64, error) {
	var n int64
	if err := c.tx.GetContext(ctx, &n, c.s.query(qQueueCostProcessing), queue); err != nil {
		return 0, fmt.Errorf("cost budget of queue %s: %w", queue, err)
	}
	return n, nil
}

// GroupCostProcessing sums the cost_units of a group's processing jobs.
func (c *ClaimTx) GroupCostProcessing(ctx context.Context, group string) (int64, error) {
	var n int64
	if err := c.tx.GetContext(ctx, &n, c.s.query(qGroupCostProcessing), group); err != nil {
		return 0, fmt.Errorf("cost budget of group %s: %w", group, err)
	}
	return n, nil
}
