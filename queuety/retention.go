package queuety

import (
	"cmp"
	"context"
	"errors"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// RetentionKind names one kind of row the retention sweep and `purge`
// delete: "completed", "buried", "logs", "events", "workflows".
type RetentionKind string

// The retention kinds.
const (
	RetainCompleted = RetentionKind(store.RetainCompleted) // completed jobs (not a pending job's dependency, not a live workflow's)
	RetainBuried    = RetentionKind(store.RetainBuried)    // buried jobs, with the same exceptions
	RetainLogs      = RetentionKind(store.RetainLogs)      // log rows, except a live job's or workflow's
	RetainEvents    = RetentionKind(store.RetainEvents)    // workflow events of finished workflows
	RetainWorkflows = RetentionKind(store.RetainWorkflows) // finished workflows with their events, jobs, signals
)

// RetentionKinds lists every kind in the order a sweep deletes them.
var RetentionKinds = func() []RetentionKind {
	out := make([]RetentionKind, len(store.RetentionKinds))
	for i, k := range store.RetentionKinds {
		out[i] = RetentionKind(k)
	}
	return out
}()

// storeRetentionCounts and retentionCounts convert rows deleted per kind
// between the store's kinds and the API's (nil stays nil).
func storeRetentionCounts(m map[RetentionKind]int) map[store.RetentionKind]int {
	if m == nil {
		return nil
	}
	out := make(map[store.RetentionKind]int, len(m))
	for k, n := range m {
		out[store.RetentionKind(k)] = n
	}
	return out
}

func retentionCounts(m map[store.RetentionKind]int) map[RetentionKind]int {
	if m == nil {
		return nil
	}
	out := make(map[RetentionKind]int, len(m))
	for k, n := range m {
		out[RetentionKind(k)] = n
	}
	return out
}

// ParseRetentionKind checks a kind's name.
func ParseRetentionKind(s string) (RetentionKind, error) {
	k, err := store.ParseRetentionKind(s)
	return RetentionKind(k), err
}

// purgeBatch is how many rows one delete statement takes at most (how
// many workflows one transaction), and purgePause the pause between two.
const (
	purgeBatch = 500
	purgePause = 20 * time.Millisecond
)

// RetentionPolicy is the age of each kind's rows to delete; a kind missing
// or 0 is kept for ever.
type RetentionPolicy map[RetentionKind]time.Duration

// RetentionPolicyOf is the policy of a Config's retention days: the rows
// the plugin's own purges take (purge_completed: completed jobs; the
// Logger's purge: log rows), plus buried jobs when asked. Finished
// workflows, their events and their dispatch keys are never swept: the
// plugin keeps them for ever (a key keeps refusing a repeated dispatch),
// and only an explicit `purge --kind workflows,events` deletes them.
func RetentionPolicyOf(cfg Config) RetentionPolicy {
	day := 24 * time.Hour
	p := RetentionPolicy{}
	if cfg.RetentionDays > 0 {
		p[RetainCompleted] = time.Duration(cfg.RetentionDays) * day
	}
	if cfg.BuriedRetentionDays > 0 {
		p[RetainBuried] = time.Duration(cfg.BuriedRetentionDays) * day
	}
	if cfg.LogRetentionDays > 0 {
		p[RetainLogs] = time.Duration(cfg.LogRetentionDays) * day
	}
	return p
}

// CountRetention counts the rows of kind older than age that Purge would
// delete now.
func (c *Client) CountRetention(ctx context.Context, kind RetentionKind, age time.Duration) (int, error) {
	if age < 0 {
		return 0, errors.New("retention age must not be negative")
	}
	return c.store.CountRetention(ctx, store.RetentionKind(kind), c.cfg.Clock.Now().Add(-age))
}

// Purge deletes the rows of kind older than age, 500 at a time with 20ms
// between statements, and returns how many it deleted (workflows: how
// many workflows).
func (c *Client) Purge(ctx context.Context, kind RetentionKind, age time.Duration) (int, error) {
	if age < 0 {
		return 0, errors.New("retention age must not be negative")
	}
	cutoff := c.cfg.Clock.Now().Add(-age)
	total := 0
	for {
		n, more, err := c.store.PurgeRetentionBatch(ctx, store.RetentionKind(kind), cutoff, cmp.Or(c.retentionBatch, purgeBatch))
		total += n
		if err != nil || !more {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(purgePause):
		}
	}
}

// Sweep runs one retention sweep of policy under the database's retention
// lock: ErrRetentionLocked when another process holds it. It returns the
// rows deleted per kind.
func (c *Client) Sweep(ctx context.Context, policy RetentionPolicy) (map[RetentionKind]int, error) {
	// A sweep holds a connection for its lock while it deletes on others:
	// on a pool shared by many sites, as many sweeps at once as it has
	// connections would each hold one and wait for another for ever. The
	// sites' sweeps take turns; a site's waits for the one under way.
	if c.sweepTurn != nil {
		select {
		case c.sweepTurn <- struct{}{}:
			defer func() { <-c.sweepTurn }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	release, ok, err := c.store.RetentionLock(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrRetentionLocked
	}
	defer release()
	out := map[RetentionKind]int{}
	for _, k := range RetentionKinds {
		age, on := policy[k]
		if !on || age <= 0 {
			continue
		}
		n, err := c.Purge(ctx, k, age)
		if n > 0 {
			out[k] = n
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
