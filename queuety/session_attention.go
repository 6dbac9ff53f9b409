package queuety

import (
	"context"
	"slices"
	"strings"

	"github.com/queuety-go/queuety/internal/sessions"
)

// UnadmittedSessionJobs is a group of pending session-bound jobs that no
// live registered worker can admit: none serves the job's queue and the
// session's queue with capabilities covering its requirements (or the
// job's worker_session cannot be read, Reason says so).
type UnadmittedSessionJobs struct {
	SessionID    string
	Queue        string
	Requirements []string
	Reason       string
	Count        int
	FirstID      int64
}

// UnadmittedSessionJobs checks the first scan pending session-bound jobs
// against workers (stale ones ignored), as the session claim would, and
// groups those none of them can take by session.
func (c *Client) UnadmittedSessionJobs(ctx context.Context, workers []sessions.Worker, scan int) ([]UnadmittedSessionJobs, error) {
	rows, err := c.store.PendingSessionJobs(ctx, scan)
	if err != nil {
		return nil, err
	}
	var live []sessions.Claimant
	for _, w := range workers {
		if w.IsStale {
			continue
		}
		caps := make(map[string]bool, len(w.Capabilities))
		for _, cp := range w.Capabilities {
			caps[cp] = true
		}
		live = append(live, sessions.Claimant{Queues: w.Queues, Caps: caps})
	}
	var out []UnadmittedSessionJobs
	index := map[string]int{}
	for i := range rows {
		row := &rows[i]
		g := UnadmittedSessionJobs{SessionID: row.SessionID.String, Queue: row.Queue}
		opts, err := sessions.JobOptions(row)
		if err != nil {
			g.Reason = "its worker_session cannot be read: " + err.Error() + " (the next claim buries it)"
		} else {
			n := opts.Normalize()
			g.Requirements = n.Requirements
			if slices.ContainsFunc(live, func(w sessions.Claimant) bool { return slices.Contains(w.Queues, row.Queue) && w.Satisfies(n) }) {
				continue
			}
			g.Reason = "no live worker serves its queue with these capabilities"
		}
		key := strings.Join(append([]string{g.SessionID, g.Queue, g.Reason}, g.Requirements...), "\x00")
		if j, ok := index[key]; ok {
			out[j].Count++
			continue
		}
		g.Count, g.FirstID = 1, row.ID
		index[key] = len(out)
		out = append(out, g)
	}
	return out, nil
}
