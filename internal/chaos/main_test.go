package chaos

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
)

// The suite's workers are this test binary re-executed in worker mode: the
// stock binary's main (cli.Main, so `queuety work` with every flag) with one
// more handler, chaosHandler, compiled in.
const (
	childEnv   = "QUEUETY_CHAOS_CHILD"    // "work": run cli.Main with os.Args
	runsDSNEnv = "QUEUETY_CHAOS_RUNS_DSN" // where the handler records its runs
	workerEnv  = "QUEUETY_CHAOS_WORKER"   // the worker's name in chaos_runs

	chaosHandler     = `Chaos\RecordRun`
	chaosSpanHandler = `Chaos\RecordSpan`
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "work" {
		os.Exit(cli.Main(append([]string{"queuety"}, os.Args[1:]...), cli.Options{Registry: childRegistry()}))
	}
	// The suite's own connections die with the servers it kills; the
	// driver's notes about them ("closing bad idle connection") are noise.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	os.Exit(m.Run())
}

// childRegistry holds chaosHandler: it records the run (job id, pid,
// attempt, worker) in chaos_runs over its own connection, committed before
// the handler returns, then sleeps 1-5 ms. The row is inserted with a token
// of its own and INSERT IGNORE, so an insert retried after a lost reply
// (its commit may have landed) is still one run.
func childRegistry() *queuety.Registry {
	db, err := sql.Open("mysql", os.Getenv(runsDSNEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		os.Exit(3)
	}
	db.SetMaxOpenConns(8)
	db.SetConnMaxLifetime(10 * time.Second)
	pid, worker := os.Getpid(), os.Getenv(workerEnv)
	reg := queuety.NewRegistry()
	reg.HandleFunc(chaosHandler, func(ctx context.Context, j *queuety.Job) error {
		var tok [8]byte
		_, _ = rand.Read(tok[:])
		token := hex.EncodeToString(tok[:])
		for {
			_, err := db.ExecContext(ctx, "INSERT IGNORE INTO chaos_runs (token, job_id, pid, attempt, worker) VALUES (?, ?, ?, ?, ?)",
				token, j.ID, pid, j.Attempt, worker)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("recording the run: %w", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Duration(1+mrand.IntN(5)) * time.Millisecond)
		return nil
	})
	// chaosSpanHandler records its run with its start and end on this
	// machine's clock, after it ran: two runs whose spans overlap ran at
	// once (the concurrency-group rounds count them).
	reg.HandleFunc(chaosSpanHandler, func(ctx context.Context, j *queuety.Job) error {
		start := time.Now()
		time.Sleep(time.Duration(2+mrand.IntN(4)) * time.Millisecond)
		end := time.Now()
		var tok [8]byte
		_, _ = rand.Read(tok[:])
		token := hex.EncodeToString(tok[:])
		for {
			_, err := db.ExecContext(ctx, "INSERT IGNORE INTO chaos_runs (token, job_id, pid, attempt, worker, started_us, ended_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
				token, j.ID, pid, j.Attempt, worker, start.UnixMicro(), end.UnixMicro())
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("recording the run: %w", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return reg
}
