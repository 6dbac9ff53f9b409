package cli

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// benchBare drains res.Jobs noop jobs with no worker at all: --claim-lanes
// loops, each claiming up to concurrency/lanes rows with the worker's own
// statements (the locking SELECT, the → processing UPDATE with the started
// log rows, COMMIT) and completing them at once with the worker's fenced
// completion and its completed log rows. Nothing runs between the two, so
// the figure is what the server can do with these statements on the
// plugin's schema: the ceiling the worker is measured against.
func benchBare(c *cli.Context, client *queuety.Client, res *BenchResult) error {
	n := c.Int("count")
	res.Mode, res.Jobs = "bare", n
	jobs := make([]store.InsertJob, n)
	for i := range jobs {
		jobs[i] = store.InsertJob{Queue: queuety.DefaultQueue, Handler: builtins.Noop, Payload: []byte(`[]`), MaxAttempts: 3}
	}
	st := clientstore.Of(client)
	t0 := time.Now()
	if _, err := st.InsertJobs(c.Context, jobs); err != nil {
		return err
	}
	res.InsertSecs = time.Since(t0).Seconds()
	lanes := max(1, c.Int("claim-lanes"))
	batch := min(c.Int("max-claim-batch"), max(1, c.Int("concurrency")/lanes))
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, lanes)
	meter := startCPU(c.Context, st)
	t1 := time.Now()
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("bench-bare-%d", l)
			for done.Load() < int64(n) {
				got, err := bareRound(c.Context, st, owner, batch)
				if err != nil {
					errs <- err
					return
				}
				done.Add(int64(got))
				if got == 0 {
					time.Sleep(time.Millisecond) // the other lane holds the last rows
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	res.DrainSecs = time.Since(t1).Seconds()
	res.CPU = meter.per(n, "job")
	res.JobsPerSec = float64(n) / res.DrainSecs
	return nil
}

// bareRound claims up to batch noop jobs for owner and completes them.
func bareRound(ctx context.Context, st *store.Store, owner string, batch int) (int, error) {
	tx, err := st.BeginClaim(ctx)
	if err != nil {
		return 0, err
	}
	rows, err := tx.Select(ctx, store.ClaimParams{Queue: queuety.DefaultQueue, Handlers: []string{builtins.Noop}, Limit: batch})
	if err != nil {
		_ = tx.Rollback()
		return 0, err
	}
	if len(rows) == 0 {
		return 0, tx.End(ctx, owner)
	}
	commit := store.ClaimCommit{WorkerID: owner, Running: make([]int64, len(rows)), Logs: make([]store.LogRow, len(rows))}
	completions := make([]store.Completion, len(rows))
	for i := range rows {
		row := &rows[i]
		commit.Running[i] = row.ID
		attempt := row.Attempts + 1
		commit.Logs[i] = store.LogFor(row, store.EventStarted)
		commit.Logs[i].Attempt = store.Int(int64(attempt))
		completed := store.LogFor(row, store.EventCompleted)
		completed.Attempt = store.Int(int64(attempt))
		completed.DurationMS, completed.MemoryPeakKB = store.Int(0), store.Int(0)
		completions[i] = store.Completion{Attempt: store.Attempt{ID: row.ID, Attempt: attempt, WorkerID: owner}, Log: completed}
	}
	if err := tx.Commit(ctx, commit); err != nil {
		return 0, err
	}
	r, err := st.CompleteJobs(ctx, completions)
	if err != nil {
		return 0, err
	}
	if len(r.Completed) != len(rows) {
		return 0, fmt.Errorf("bare loop: %d of %d completions written", len(r.Completed), len(rows))
	}
	return len(rows), nil
}
