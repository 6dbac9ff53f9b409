// Command riverbench times River's noop drain on PostgreSQL the way
// `river bench` does (insert the jobs, then drain them with 1,000
// workers), so `queuety bench jobs` can be compared with it in the same run
// on the same machine. It is a module of its own: River and pgx are not
// dependencies of queuety-go.
//
//	go run ./scripts/riverbench --count 50000 --database-url postgres://postgres@127.0.0.1:5432/test
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	count := flag.Int("count", 50000, "jobs to insert, then drain")
	workers := flag.Int("workers", 1000, "River MaxWorkers (river bench uses 1,000)")
	url := flag.String("database-url", "postgres://postgres@127.0.0.1:5432/test", "PostgreSQL URL")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	if err := run(*url, *count, *workers, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

func run(url string, count, maxWorkers int, asJSON bool) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	t0 := time.Now()
	const batch = 2000
	for done := 0; done < count; done += batch {
		params := make([]river.InsertManyParams, min(batch, count-done))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return err
		}
	}
	insert := time.Since(t0)
	// As river bench does: completions counted from a subscription big
	// enough never to drop one.
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: count, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	t1 := time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	for n := 0; n < count; n++ {
		select {
		case <-events:
		case <-time.After(time.Minute):
			return fmt.Errorf("drain stalled after %d of %d jobs", n, count)
		}
	}
	drain := time.Since(t1)
	stopCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	_ = client.Stop(stopCtx)
	res := map[string]any{"jobs": count, "workers": maxWorkers, "insert_seconds": insert.Seconds(),
		"drain_seconds": drain.Seconds(), "jobs_per_second": float64(count) / drain.Seconds()}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("River: inserted %d jobs in %.2fs, drained in %.2fs: %.0f jobs/s (%d workers)\n",
		count, insert.Seconds(), drain.Seconds(), res["jobs_per_second"], maxWorkers)
	return nil
}
