//go:build measure

package cli_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// TestMeasureForEachPlan (N4) is a measurement, not a check: with
// QUEUETY_MEASURE_FOR_EACH=N set it dispatches a workflow whose for_each
// step has N items (integers, no handler: the daemon only plans them) to a
// `work` subprocess and prints the time from the daemon's start to its
// first branch job, how many branches it planned within
// QUEUETY_MEASURE_WAIT (default 60s) after that, and the daemon's peak and
// current resident memory (VmHWM, VmRSS). N defaults to 1,000,000. It
// asserts nothing about the figures: the machine it runs on decides them,
// so it is built only with the tag measure and never runs in make test.
//
//	go test -tags measure -count=1 -run TestMeasureForEachPlan -v ./queuety/cli/
func TestMeasureForEachPlan(t *testing.T) {
	n := 1_000_000
	if v := os.Getenv("QUEUETY_MEASURE_FOR_EACH"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "QUEUETY_MEASURE_FOR_EACH")
		require.Positive(t, n, "QUEUETY_MEASURE_FOR_EACH")
	}
	wait := 60 * time.Second
	if v := os.Getenv("QUEUETY_MEASURE_WAIT"); v != "" {
		var err error
		wait, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	ctx := context.Background()
	dsn := newDB(t)
	db := openDB(t, dsn)
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	items := make([]phpjson.Value, n)
	for i := range items {
		items[i] = phpjson.Int(int64(i))
	}
	d, err := workflow.New("measure").ForEach("items", `App\Item`).Build(phpjson.NewObject().Set("items", phpjson.List(items...)))
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	items, d = nil, nil

	branches := func() int {
		return count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ?", id, `App\Item`)
	}
	start := time.Now()
	daemon := startDaemon(t, "--dsn", dsn, "work", "--max-for-each-items", "-1", "--poll-interval", "20ms")
	waitFor(t, 5*time.Minute, "the first branch job", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM (SELECT 1 FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ? LIMIT 1) AS one", id, `App\Item`) > 0
	})
	first := time.Since(start)
	deadline := time.Now().Add(wait)
	planned := branches()
	for planned < n && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		planned = branches()
	}
	all := time.Since(start)
	hwm, rss := procMemory(t, daemon.cmd.Process.Pid, "VmHWM"), procMemory(t, daemon.cmd.Process.Pid, "VmRSS")
	t.Logf("for_each of %d items: first branch after %s; %d branches planned after %s; daemon VmHWM %d MiB, VmRSS %d MiB",
		n, first.Round(10*time.Millisecond), planned, all.Round(time.Second), hwm>>10, rss>>10)
}

// procMemory reads a /proc/<pid>/status figure, in KiB.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
