package cli_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
)

// `work` waits for SIGTERM itself, so it runs as a subprocess of the stock
// binary: drain 20 jobs, then SIGTERM stops it cleanly with exit 0.
func TestWorkDrainsThenStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	db := openDB(t, dsn)

	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	for i := range 20 {
		_, err := c.Dispatch(ctx, builtins.Noop, map[string]any{"i": i})
		require.NoError(t, err)
	}
	// A job for a handler the stock binary lacks stays pending for PHP.
	php, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "--dsn", dsn, "work", "--concurrency", "4", "--poll-interval", "20ms", "--worker-id", "cli-test-worker")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	// exited is closed when the process has exited; waitErr is then set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill() // only the process this test started
			<-exited
		}
	})

	deadline := time.Now().Add(15 * time.Second)
	for count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'completed'") < 20 {
		select {
		case <-exited:
			t.Fatalf("work exited early: %v\nstderr:\n%s", waitErr, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not completed after 15s\nstderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 40, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"` WHERE event IN ('started', 'completed')"))
	require.Equal(t, 20, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE reserved_by = 'cli-test-worker'"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			t.Fatalf("work exited with %v after SIGTERM\nstderr:\n%s", ee, stderr.String())
		}
		require.NoError(t, waitErr)
	case <-time.After(10 * time.Second):
		t.Fatalf("work still running 10s after SIGTERM\nstderr:\n%s", stderr.String())
	}
	require.Equal(t, 0, cmd.ProcessState.ExitCode())
	require.Contains(t, stderr.String(), "worker started")
	require.Contains(t, stderr.String(), "worker stopped")
	require.Contains(t, stderr.String(), "completed=20")
	require.Equal(t, "pending", jobRow(t, db, php.ID).Status)
}

func TestWorkFlagErrors(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"concurrency 0", []string{"--concurrency", "0"}, "--concurrency"},
		{"concurrency -c 0", []string{"-c", "0"}, "--concurrency"},
		{"concurrency too high", []string{"--concurrency", "20000"}, "concurrency"},
		{"backoff nonsense", []string{"--backoff", "nonsense"}, "--backoff"},
		{"backoff negative list", []string{"--backoff", "10,-5"}, "--backoff"},
		{"empty queue", []string{"--queue", ""}, "--queue"},
		{"blank queues", []string{"--queue", " , ,"}, "--queue"},
		{"queue over 64 characters", []string{"--queue", "default," + strings.Repeat("q", 65)}, "queue"},
		{"rescue schedule", []string{"--rescue-schedule", "every tuesday"}, "--rescue-schedule"},
		{"heartbeat not below stale timeout", []string{"--stale-timeout", "10s", "--heartbeat-interval", "10s"}, "--heartbeat-interval 10s: must be shorter than --stale-timeout 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, on(dsn, append([]string{"work"}, tc.args...)...)...)
			require.Equal(t, cli.ExitUsage, r.code, r.String())
			require.Contains(t, r.stderr, tc.want, r.String())
		})
	}
	r := run(t, "--dsn", dsn, "--log-level", "loud", "work")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--log-level")
	r = run(t, "--dsn", dsn, "--log-format", "xml", "work")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--log-format")
}

// The first SIGTERM stops gracefully (running jobs may finish within the
// grace); a second forces the stop: the running jobs are cancelled at once
// and handed back to pending, and work exits 1.
func TestWorkSecondSignalForcesStop(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	db := openDB(t, dsn)

	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	for range 3 {
		_, err := c.Dispatch(ctx, builtins.Sleep, map[string]any{"ms": 60000})
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())

	var stderr syncBuffer
	cmd := exec.Command(bin, "--dsn", dsn, "work", "--concurrency", "4", "--poll-interval", "20ms", "--shutdown-grace", "2m")
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill() // only the process this test started
			<-exited
		}
	})
	processing := func() int {
		return count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'processing'")
	}
	deadline := time.Now().Add(15 * time.Second)
	for processing() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("jobs not running after 15s\nstderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "a second signal forces the stop") {
		if time.Now().After(deadline) {
			t.Fatalf("no graceful stop after SIGTERM\nstderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-exited:
		t.Fatalf("work exited at the first signal, before the grace: %v\nstderr:\n%s", waitErr, stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	require.Equal(t, 3, processing(), "the first signal lets running jobs run")

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("work still running 10s after the second signal\nstderr:\n%s", stderr.String())
	}
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, cli.ExitError, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "second signal: forcing the stop")
	require.Contains(t, stderr.String(), "stop forced by a second signal")
	require.Equal(t, 0, processing())
	require.Equal(t, 3, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'pending' AND attempts = 0"), "handed back with their attempt restored")
}
