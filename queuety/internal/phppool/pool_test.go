package phppool_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// phpError asserts err is a PHP failure and returns it.
func phpError(t *testing.T, err error) *phppool.Error {
	t.Helper()
	var pe *phppool.Error
	require.ErrorAs(t, err, &pe)
	return pe
}

func TestHandlersSucceedOrFailWithPHPsClassMessageAndTrace(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)

	require.NoError(t, handle(t, p, 1, "ok", ""))
	require.NoError(t, handle(t, p, 2, "GreetHandler", `{"name":"zo\u00eb"}`), "a Queuety\\Handler class by name")
	require.NoError(t, handle(t, p, 3, "DoubleStep", `{"n":2}`), "a Queuety\\Step class by name")
	big := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	require.NoError(t, handle(t, p, 10, "ok", big), "a frame larger than the pipe")

	e := phpError(t, handle(t, p, 4, "throws", `{"message":"boom \u2713"}`))
	require.Equal(t, "RuntimeException", e.Class)
	require.Equal(t, "boom ✓", e.Message)
	require.True(t, strings.HasPrefix(e.Trace, "#0 "), e.Trace)
	// The worker reads these through its optional interfaces.
	var ec queuety.ErrorClass
	var et queuety.ErrorTrace
	require.ErrorAs(t, error(e), &ec)
	require.ErrorAs(t, error(e), &et)
	require.Equal(t, e.Trace, et.ErrorTrace())

	e = phpError(t, handle(t, p, 5, "nope", ""))
	require.Equal(t, "RuntimeException", e.Class)
	require.Equal(t, "Handler not found: nope", e.Message, "Queuety's own message")

	require.Equal(t, 1, p.Stats().Spawns, "failures do not cost the process")
}

func TestCrashFailsTheJobAndAFreshProcessTakesOver(t *testing.T) {
	t.Parallel()
	for handler, how := range map[string]string{
		"segfaults": "signal: segmentation fault",
		"exits":     "exit status 3",
	} {
		t.Run(handler, func(t *testing.T) {
			t.Parallel()
			p := startPool(t, phppool.Config{Workers: 1}, nil)
			before := p.Stats().PIDs[0]

			e := phpError(t, handle(t, p, 1, handler, ""))
			require.Equal(t, phppool.ClassWorkerCrashed, e.Class)
			require.Contains(t, e.Message, "PHP worker "+itoa(before)+" exited during the job: "+how)
			require.Contains(t, e.Trace, "last output of PHP worker")

			require.NoError(t, handle(t, p, 2, "ok", ""))
			st := p.Stats()
			require.NotEqual(t, before, st.PIDs[0], "replaced")
			require.Equal(t, 1, st.Crashes)
			require.Equal(t, 2, st.Spawns)
			require.False(t, alive(before))
		})
	}
}

func TestAProcessKilledWhileIdleIsReplacedWithoutFailingAJob(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	pid := p.Stats().PIDs[0]
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL)) // the OOM killer, say
	waitFor(t, 5*time.Second, "the death noticed", func() bool { return p.Stats().Crashes == 1 })
	require.NoError(t, handle(t, p, 1, "ok", ""))
	st := p.Stats()
	require.NotEqual(t, pid, st.PIDs[0])
	require.Equal(t, 1, st.Crashes)
}

func TestDeathIsNoticedWhenAChildHoldsTheResponsePipe(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	pid := p.Stats().PIDs[0]
	start := time.Now()
	e := phpError(t, handle(t, p, 1, "detaches", ""))
	require.Less(t, time.Since(start), 3*time.Second)
	require.Equal(t, phppool.ClassWorkerCrashed, e.Class)
	require.Contains(t, e.Message, "PHP worker "+itoa(pid)+" exited during the job: exit status 3")
	require.NoError(t, handle(t, p, 2, "ok", ""))
}

func TestEndedContextKillsTheProcessAndAFreshOneTakesOver(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	before := p.Stats().PIDs[0]

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Handle(ctx, job(t, 1, "sleeps", `{"ms":10000}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second, "killed, not waited for")
	require.False(t, alive(before), "SIGKILLed")

	// The cause of the cancellation is what Handle returns (ErrJobLost,
	// ErrShutdown, the worker's TimeoutError).
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	// Late enough that the fresh process took the job even on a loaded
	// machine (cancelled before that, there is nothing to kill).
	go func() { time.Sleep(time.Second); cancel2(queuety.ErrJobLost) }()
	require.ErrorIs(t, p.Handle(ctx2, job(t, 2, "sleeps", `{"ms":10000}`)), queuety.ErrJobLost)

	require.NoError(t, handle(t, p, 3, "ok", ""))
	st := p.Stats()
	require.Equal(t, 2, st.Kills)
	require.Equal(t, 0, st.Crashes, "a kill is not a crash: no backoff, no give-up budget spent")
	require.Equal(t, 3, st.Spawns)
}

func TestProcessesAreRecycledAfterMaxJobs(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1, MaxJobs: 2}, nil)
	var pids []string
	for i := range 5 {
		// whoami fails with the pid of the process that ran it.
		pids = append(pids, phpError(t, handle(t, p, int64(i+1), "whoami", "")).Message)
	}
	require.Equal(t, pids[0], pids[1])
	require.NotEqual(t, pids[1], pids[2], "recycled after 2 jobs")
	require.Equal(t, pids[2], pids[3])
	require.NotEqual(t, pids[3], pids[4])
	st := p.Stats()
	require.Equal(t, 2, st.Recycles)
	require.Equal(t, 0, st.Crashes)
	first, _ := strconv.Atoi(pids[0])
	waitFor(t, 5*time.Second, "retired processes to exit", func() bool { return !alive(first) })
}

func TestProcessesAreRecycledOverMaxMemory(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1, MaxMemoryMB: 16}, nil)
	before := p.Stats().PIDs[0]
	require.NoError(t, handle(t, p, 1, "ok", ""))
	require.Equal(t, before, p.Stats().PIDs[0], "a small job keeps its process")
	require.NoError(t, handle(t, p, 2, "memory", `{"mb":32}`))
	waitFor(t, 5*time.Second, "a new process", func() bool { pid := p.Stats().PIDs[0]; return pid != 0 && pid != before })
	require.NoError(t, handle(t, p, 3, "ok", ""))
	require.Equal(t, 1, p.Stats().Recycles)
}

func TestOutputGoesToTheLogAndNeverBreaksTheProtocol(t *testing.T) {
	t.Parallel()
	logs := &capture{}
	p := startPool(t, phppool.Config{Workers: 1}, slogNew(logs))
	pid := p.Stats().PIDs[0]
	for i := range 3 {
		require.NoError(t, handle(t, p, int64(i+1), "echoes", ""))
	}
	require.NoError(t, handle(t, p, 4, "ok", ""))
	require.Equal(t, pid, p.Stats().PIDs[0], "same process throughout")
	require.Equal(t, 0, p.Stats().Crashes)

	waitFor(t, 5*time.Second, "the output in the log", func() bool {
		all := strings.Join(logs.lines(), "\n")
		for _, want := range []string{"noise on stdout via echo", "printf noise 42", "noise written straight to fd 1", "noise on stderr", "booting the phppool test app"} {
			if !strings.Contains(all, want) {
				return false
			}
		}
		return true
	})
	for _, l := range logs.lines() {
		if strings.Contains(l, "noise on stderr") {
			require.Contains(t, l, "php_pid="+itoa(pid), "each line names its process")
		}
	}
}

func TestConcurrentJobsShareTheProcesses(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 4}, nil)
	const n = 80
	errs := make(chan error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handler, payload := "sleeps", `{"ms":50}`
			if i%4 == 0 {
				handler, payload = "ok", ""
			}
			errs <- handle(t, p, int64(i+1), handler, payload)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	elapsed := time.Since(start)
	t.Logf("%d jobs (60 of them 50 ms sleeps) on 4 processes in %s", n, elapsed)
	require.Less(t, elapsed, 2500*time.Millisecond, "one process alone needs 3 s")
	st := p.Stats()
	require.Equal(t, n, st.Jobs)
	require.Equal(t, 4, st.Spawns)
}

func TestHandleWaitsForAFreeProcessOnlyAsLongAsItsContext(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	first := make(chan error, 1)
	go func() { first <- handle(t, p, 1, "sleeps", `{"ms":600}`) }()
	waitFor(t, 5*time.Second, "the first job to run", func() bool { return p.Stats().Busy == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Handle(ctx, job(t, 2, "ok", "")), context.DeadlineExceeded)
	require.NoError(t, <-first, "the running job is not disturbed")
	require.Equal(t, 0, p.Stats().Kills)
}

func TestStartFailsWithTheReason(t *testing.T) {
	t.Parallel()
	php := requirePHP(t)
	script, _ := filepath.Abs("../../../php-bridge/bin/queuety-php-worker")
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.php")
	require.NoError(t, os.WriteFile(broken, []byte("<?php\nthrow new LogicException('the bootstrap is broken');\n"), 0o644))
	wrongProtocol := filepath.Join(dir, "wrong.php")
	require.NoError(t, os.WriteFile(wrongProtocol, []byte(`<?php $b = '{"type":"ready","protocol":99}'; fwrite(fopen('php://fd/3', 'wb'), pack('N', strlen($b)) . $b); sleep(5);`), 0o644))
	garbage := filepath.Join(dir, "garbage.php")
	require.NoError(t, os.WriteFile(garbage, []byte(`<?php fwrite(fopen('php://fd/3', 'wb'), "\xff\xff\xff\xffjunk"); sleep(5);`), 0o644))

	// Every case but the last fails on its own long before its start
	// timeout; a loaded machine can take more than 300 ms to start PHP, so
	// only the case that is about the timeout gets the short one.
	for name, tc := range map[string]struct {
		cmd     []string
		want    []string
		timeout time.Duration
	}{
		"no such binary":      {[]string{"/nonexistent/php"}, []string{`starting PHP worker "/nonexistent/php"`}, 0},
		"no bootstrap file":   {[]string{php, script, "--bootstrap", filepath.Join(dir, "missing.php")}, []string{"exited before it was ready: exit status 2", "missing.php: no such readable file"}, 0},
		"bootstrap throws":    {[]string{php, script, "--bootstrap", broken}, []string{"exited before it was ready: exit status 255", "the bootstrap is broken"}, 0},
		"not the worker":      {[]string{php, wrongProtocol}, []string{"speaks protocol 99, this daemon 1"}, 0},
		"garbage on fd 3":     {[]string{php, garbage}, []string{"sent a bad first frame", "larger than the"}, 0},
		"never becomes ready": {[]string{php, "-r", "sleep(10);"}, []string{"did not become ready within 300ms"}, 300 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			p, err := phppool.New(phppool.Config{Command: tc.cmd, Workers: 2, StartTimeout: timeout}, testLogger())
			require.NoError(t, err)
			err = p.Start(context.Background())
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.ErrorIs(t, p.Handle(context.Background(), job(t, 1, "ok", "")), phppool.ErrStopped)
		})
	}
}

func TestPoolGivesUpWhenProcessesKeepCrashing(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1, MaxCrashes: 3}, nil)
	for i := range 3 {
		e := phpError(t, handle(t, p, int64(i+1), "exits", ""))
		require.Equal(t, phppool.ClassWorkerCrashed, e.Class)
	}
	select {
	case <-p.GaveUp():
	case <-time.After(5 * time.Second):
		t.Fatal("the pool did not give up")
	}
	var gu *phppool.GaveUpError
	require.ErrorAs(t, p.Err(), &gu)
	require.Equal(t, 3, gu.Crashes)
	require.Contains(t, gu.Error(), "exit status 3")
	require.ErrorAs(t, p.Handle(context.Background(), job(t, 9, "ok", "")), &gu)
}

func TestStopLetsRunningJobsFinishThenEndsEveryProcess(t *testing.T) {
	t.Parallel()
	p, err := phppool.New(phppool.Config{Command: workerCommand(t), Workers: 2}, testLogger())
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	pids := p.Stats().PIDs

	running := make(chan error, 1)
	go func() { running <- handle(t, p, 1, "sleeps", `{"ms":400}`) }()
	waitFor(t, 5*time.Second, "the job to run", func() bool { return p.Stats().Busy == 1 })
	require.NoError(t, p.Stop(context.Background()))
	require.NoError(t, <-running, "finished, not killed")
	for _, pid := range pids {
		require.False(t, alive(pid))
	}
	require.ErrorIs(t, p.Handle(context.Background(), job(t, 2, "ok", "")), phppool.ErrStopped)
}

func TestStopKillsEverythingWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	p, err := phppool.New(phppool.Config{Command: workerCommand(t), Workers: 1}, testLogger())
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	pid := p.Stats().PIDs[0]
	running := make(chan error, 1)
	go func() { running <- handle(t, p, 1, "sleeps", `{"ms":10000}`) }()
	waitFor(t, 5*time.Second, "the job to run", func() bool { return p.Stats().Busy == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, p.Stop(ctx), context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second)
	e := phpError(t, <-running)
	require.Equal(t, phppool.ClassWorkerCrashed, e.Class)
	require.False(t, alive(pid))
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	_, err := phppool.New(phppool.Config{}, nil)
	require.ErrorContains(t, err, "no PHP command")
	_, err = phppool.New(phppool.Config{Command: []string{"php"}, Workers: -1}, nil)
	require.ErrorContains(t, err, "Workers -1")
	p, err := phppool.New(phppool.Config{Command: []string{"php"}}, nil)
	require.NoError(t, err)
	require.ErrorContains(t, p.Handle(context.Background(), &queuety.Job{}), "before Start")
}

// alive reports whether a process exists (and is not a zombie we own: the
// pool reaps every process it ends).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
