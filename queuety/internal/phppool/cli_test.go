package phppool_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testbin"
	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

// The CLI wiring: `queuety work --php` and `queuety bench jobs --php`.

// phpFlag is the --php value for the test app, quoted as a user would.
func phpFlag(t *testing.T) string {
	t.Helper()
	cmd := workerCommand(t)
	return fmt.Sprintf("%s '%s' --bootstrap \"%s\"", cmd[0], cmd[1], cmd[3])
}

// queuetyBinary is the stock binary, built once for the package's tests.
func queuetyBinary(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Queuety()
	require.NoError(t, err)
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(append([]string{"queuety"}, args...), cli.Options{Stdout: &out, Stderr: &errOut})
	return code, out.String(), errOut.String()
}

func TestBenchDrainsPHPJobsThroughThePool(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	dsn := c.Config().DSN
	code, stdout, stderr := runCLI("bench", "jobs", "--dsn", dsn, "--count", "300", "--concurrency", "16",
		"--php", phpFlag(t), "--php-workers", "2", "--php-handler", "ok", "--json")
	require.Equal(t, cli.ExitOK, code, stderr)
	var res cli.BenchResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, 300, res.Jobs)
	require.Equal(t, "ok", res.Handler)
	require.Equal(t, 2, res.PHPWorkers)
	require.Positive(t, res.JobsPerSec)
	require.Equal(t, 600, res.LogRows)

	code, _, stderr = runCLI("bench", "jobs", "--dsn", dsn, "--count", "5", "--php", phpFlag(t), "--php-workers", "1", "--php-handler", "throws")
	require.Equal(t, cli.ExitError, code)
	require.Contains(t, stderr, "throws jobs failed")

	code, _, stderr = runCLI("bench", "jobs", "--dsn", dsn, "--php", phpFlag(t))
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, stderr, "--php-handler")
}

func TestWorkRejectsBadPHPFlagsBeforeConnecting(t *testing.T) {
	t.Parallel()
	const nowhere = "root@tcp(127.0.0.1:1)/nowhere"
	for args, msg := range map[*[]string]string{
		{"--php", "php 'oops"}:                           "--php: unterminated ' quote",
		{"--php", "php w.php", "--php-workers", "0"}:     "--php-workers 0: must be at least 1",
		{"--php", "php w.php", "--php-max-memory", "-1"}: "--php-max-memory -1",
	} {
		code, _, stderr := runCLI(append([]string{"work", "--dsn", nowhere}, *args...)...)
		require.Equal(t, cli.ExitUsage, code, stderr)
		require.Contains(t, stderr, msg)
	}
}

func TestWorkCommandRunsPHPJobsAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	var jobs []map[string]any
	for i := range 10 {
		jobs = append(jobs, map[string]any{"handler": "ok", "payload": map[string]any{"i": i}})
	}
	jobs = append(jobs, map[string]any{"handler": "echoes"}, map[string]any{"handler": "queuety.noop"})
	ids := phpDispatch(t, c, jobs...)

	cmd := exec.Command(queuetyBinary(t), "work", "--dsn", c.Config().DSN, "--rescue-schedule", "off", "--poll-interval", "10ms")
	// The environment names the pool, as a service unit would.
	cmd.Env = append(os.Environ(), "QUEUETY_PHP="+phpFlag(t), "QUEUETY_PHP_WORKERS=2")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	waitStatus(t, c, store.StatusCompleted, ids...)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, waitCmd(t, cmd, 15*time.Second), stderr.String())

	log := stderr.String()
	require.Contains(t, log, `msg="PHP pool started" component=phppool workers=2`)
	require.Contains(t, log, `msg="PHP pool stopped"`)
	require.Regexp(t, `msg="php output" component=phppool php_pid=\d+ stream=stderr line="noise on stderr"`, log)
	require.Contains(t, log, "handlers=\"all (claim-all)\"", "the fallback makes the worker claim every handler")
}

func TestWorkCommandExitsWhenThePHPPoolGivesUp(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	var jobs []map[string]any
	for range 12 {
		jobs = append(jobs, map[string]any{"handler": "exits", "max_attempts": 1})
	}
	phpDispatch(t, c, jobs...)
	cmd := exec.Command(queuetyBinary(t), "work", "--dsn", c.Config().DSN, "--rescue-schedule", "off",
		"--php", phpFlag(t), "--php-workers", "4", "--concurrency", "4")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	err := waitCmd(t, cmd, 30*time.Second)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, cli.ExitError, ee.ExitCode())
	require.Contains(t, stderr.String(), "queuety: phppool: gave up after 10 PHP worker crashes within 1m0s (last: PHP worker")
}

func waitCmd(t *testing.T, cmd *exec.Cmd, timeout time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		t.Fatalf("queuety did not exit within %s", timeout)
		return nil
	}
}

// syncBuffer is testbin.SyncBuffer.
type syncBuffer = testbin.SyncBuffer
