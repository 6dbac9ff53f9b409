package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/queuety-go/queuety/queuety"
)

// withUnclaimed adds to each queue's stats the pending jobs no live
// queuety worker runs (a queue that has only those is added).
func withUnclaimed(ctx context.Context, client *queuety.Client, stats []queuety.QueueStats) ([]queuety.QueueStats, error) {
	un, err := client.UnclaimedJobs(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range un {
		i := -1
		for j := range stats {
			if stats[j].Queue == u.Queue {
				i = j
				break
			}
		}
		if i < 0 {
			continue // Stats lists every queue with jobs
		}
		stats[i].Unclaimed = append(stats[i].Unclaimed, u)
	}
	return stats, nil
}

// printUnclaimed is status's section of pending jobs no live queuety
// worker runs; nothing when there are none.
func printUnclaimed(w io.Writer, stats []queuety.QueueStats) error {
	total := 0
	for _, s := range stats {
		for _, u := range s.Unclaimed {
			total += u.Jobs
		}
	}
	if total == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nNo live queuety worker runs %d pending jobs (PHP workers do not register; PHP SEEN: one ran a job on the queue in the last %s):\n", total, queuety.PHPSeenWindow)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  QUEUE\tHANDLER\tKIND\tJOBS\tPHP SEEN")
	for _, s := range stats {
		for _, u := range s.Unclaimed {
			php := "no"
			if u.PHPSeen {
				php = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", esc(s.Queue), esc(u.Handler), u.Kind, u.Jobs, php)
		}
	}
	return tw.Flush()
}
