package queuety

import (
	"context"
	"sort"

	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Diagnosis lists the rows that can never run as they are: jobs no claim
// or sweep will ever take, and live workflows that can never finish. It
// is bounded (StuckScan), so it is cheap on a large table and may miss
// rows beyond its bounds.
type Diagnosis struct {
	Jobs      []StuckJob
	Workflows []workflow.StuckWorkflow
}

// attentionIDs is how many ids a summary line keeps.
const attentionIDs = 5

// Diagnose finds the rows that can never run as they are (scan's zero
// fields take the bounds `status` uses).
func (c *Client) Diagnose(ctx context.Context, scan StuckScan) (*Diagnosis, error) {
	jobs, wfs, err := c.diagnose(ctx, store.StuckScan(scan))
	if err != nil {
		return nil, err
	}
	d := &Diagnosis{Workflows: wfs}
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, rowview.Stuck(j))
	}
	return d, nil
}

// diagnose is Diagnose on the store's rows.
func (c *Client) diagnose(ctx context.Context, scan store.StuckScan) ([]store.StuckJob, []workflow.StuckWorkflow, error) {
	jobs, err := c.store.StuckJobs(ctx, scan)
	if err != nil {
		return nil, nil, err
	}
	wfs, err := c.engine(nil).StuckWorkflows(ctx, scan)
	if err != nil {
		return nil, nil, err
	}
	return jobs, wfs, nil
}

// StuckJobsByID tells which of the given jobs can never run as they are.
func (c *Client) StuckJobsByID(ctx context.Context, ids []int64) (map[int64]StuckJob, error) {
	stuck, err := c.store.StuckJobsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]StuckJob, len(stuck))
	for id, j := range stuck {
		out[id] = rowview.Stuck(j)
	}
	return out, nil
}

// JobsByID reads the given jobs, newest first (missing ids are skipped).
func (c *Client) JobsByID(ctx context.Context, ids []int64) ([]JobInfo, error) {
	rows, err := c.store.JobsByID(ctx, ids)
	return rowview.Jobs(rows), err
}

// Status is Stats with each queue's NeedsAttention filled from a
// diagnosis; a queue that only has stuck workflows is added.
func (c *Client) Status(ctx context.Context) ([]QueueStats, error) {
	stats, err := c.store.Stats(ctx)
	if err != nil {
		return nil, err
	}
	jobs, wfs, err := c.diagnose(ctx, store.StuckScan{})
	if err != nil {
		return nil, err
	}
	return rowview.Queues(attach(stats, jobs, wfs)), nil
}

// attach adds the diagnosis, summarized by queue and kind, to stats.
func attach(stats []store.QueueStats, jobs []store.StuckJob, wfs []workflow.StuckWorkflow) []store.QueueStats {
	byQueue := map[string]map[string]*store.Attention{}
	add := func(queue, table, kind, reason string, id int64) {
		if byQueue[queue] == nil {
			byQueue[queue] = map[string]*store.Attention{}
		}
		a := byQueue[queue][kind]
		if a == nil {
			a = &store.Attention{Kind: kind, Table: table, Reason: reason, IDs: []int64{}}
			byQueue[queue][kind] = a
		}
		a.Count++
		if len(a.IDs) < attentionIDs {
			a.IDs = append(a.IDs, id)
		}
	}
	for _, j := range jobs {
		add(j.Queue, "jobs", j.Kind, store.StuckKinds[j.Kind], j.ID)
	}
	for _, w := range wfs {
		add(w.Queue, "workflows", w.Kind, workflow.StuckKinds[w.Kind], w.ID)
	}
	idx := map[string]int{}
	for i, s := range stats {
		idx[s.Queue] = i
	}
	queues := make([]string, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		i, ok := idx[q]
		if !ok {
			stats = append(stats, store.QueueStats{Queue: q, Counts: zeroCounts()})
			i = len(stats) - 1
		}
		for _, a := range byQueue[q] {
			stats[i].NeedsAttention = append(stats[i].NeedsAttention, *a)
		}
		sort.Slice(stats[i].NeedsAttention, func(x, y int) bool {
			return stats[i].NeedsAttention[x].Kind < stats[i].NeedsAttention[y].Kind
		})
	}
	return stats
}

func zeroCounts() map[string]int {
	c := make(map[string]int, len(store.Statuses))
	for _, st := range store.Statuses {
		c[st] = 0
	}
	return c
}
