package phppool_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// TestRunawayJobIsStoppedNearTheMemoryLimit (N9): a PHP job growing to
// 1.5 GB with no PHP memory_limit is killed while it runs, well short of
// that, once its resident memory passes MemoryLimitMB; the job fails with
// the limit named, and the slot's next job runs in a fresh process.
func TestRunawayJobIsStoppedNearTheMemoryLimit(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1, MaxMemoryMB: 64, MemoryLimitMB: 256}, nil)
	before := p.Stats().PIDs[0]
	e := phpError(t, handle(t, p, 1, "grows", `{"mb":1536}`))
	require.Equal(t, phppool.ClassMemoryLimit, e.Class, e.Message)
	m := regexp.MustCompile(`used (\d+) MiB of memory during the job, over the limit of 256 MiB`).FindStringSubmatch(e.Message)
	require.NotNil(t, m, e.Message)
	used, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Greater(t, used, 256)
	require.Less(t, used, 1024, "stopped near the limit, not at 1.5 GB")

	require.NoError(t, handle(t, p, 2, "ok", ""))
	require.NotEqual(t, before, p.Stats().PIDs[0], "a fresh process")
	require.Equal(t, 1, p.Stats().Kills)
	require.Zero(t, p.Stats().Crashes, "the limit is not a crash")
}

// TestForkedChildrenDoNotOutliveThePool (N11): a job that leaves a
// pcntl_fork child and a shell background job behind completes, and once
// the pool stops neither child is still running.
func TestForkedChildrenDoNotOutliveThePool(t *testing.T) {
	t.Parallel()
	p, err := phppool.New(phppool.Config{Command: workerCommand(t), Workers: 1}, testLogger())
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	pidfile := filepath.Join(t.TempDir(), "pids")
	require.NoError(t, handle(t, p, 1, "forks", `{"pidfile":"`+pidfile+`"}`))
	raw, err := os.ReadFile(pidfile)
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		require.True(t, running(pid), "child %d runs while the pool does", pid)
		pids = append(pids, pid)
	}
	require.Len(t, pids, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, p.Stop(ctx))
	for _, pid := range pids {
		waitFor(t, 5*time.Second, "the children to end", func() bool { return !running(pid) })
	}
}

// running says whether pid is a live process: not gone, not a zombie
// waiting for a parent (here possibly a PID 1 that never reaps).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return alive(pid)
	}
	// pid (comm) state …: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
