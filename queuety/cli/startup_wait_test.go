package cli_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// outage stands between a daemon and MariaDB on a loopback port and plays
// a database that is down: nothing listening (connection refused), a
// listener that drops each connection at accept, one that cuts each
// connection after a few bytes of the handshake, and at last a plain
// forwarder. The shared MariaDB is never touched.
type outage struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	mode  string // "refuse", "drop", "cut", "forward"
	conns []net.Conn
}

func newOutage(t *testing.T, target string) *outage {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := &outage{t: t, addr: ln.Addr().String(), target: target, mode: "refuse"}
	require.NoError(t, ln.Close()) // the port now refuses
	t.Cleanup(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.ln != nil {
			_ = o.ln.Close()
		}
		for _, c := range o.conns {
			_ = c.Close()
		}
	})
	return o
}

// set switches the mode; leaving "refuse" listens on the port again.
func (o *outage) set(mode string) {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mode = mode
	if mode == "refuse" || o.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", o.addr)
	require.NoError(o.t, err)
	o.ln = ln
	go o.serve(ln)
}

func (o *outage) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		o.mu.Lock()
		mode := o.mode
		o.mu.Unlock()
		if mode == "drop" {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", o.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		o.mu.Lock()
		o.conns = append(o.conns, c, up)
		o.mu.Unlock()
		var fromServer io.Reader = up
		if mode == "cut" {
			// The server's greeting, cut short: the client fails mid-handshake.
			fromServer = io.LimitReader(up, 40)
		}
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, fromServer); _ = c.Close(); _ = up.Close() }()
	}
}

func viaOutage(t *testing.T, dsn string) (*outage, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	o := newOutage(t, cfg.Addr)
	cfg.Addr = o.addr
	return o, cfg.FormatDSN()
}

// daemon is a subprocess whose stderr the test reads as it runs.
type daemon struct {
	cmd     *exec.Cmd
	stderr  *syncBuffer
	exited  chan struct{}
	waitErr error
}

func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(stockBinary(t), args...)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	d := startCmd(t, cmd)
	d.stderr = stderr
	return d
}

// startCmd starts cmd, its output already routed, and kills it at cleanup
// if it is still running. Its exited closes once it has exited; waitErr
// is then set.
func startCmd(t *testing.T, cmd *exec.Cmd) *daemon {
	t.Helper()
	d := &daemon{cmd: cmd, exited: make(chan struct{})}
	require.NoError(t, cmd.Start())
	go func() { d.waitErr = cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = cmd.Process.Kill() // only the process this test started
			<-d.exited
		}
	})
	return d
}

// waitWork waits up to 90 s for cond, failing the test at once if the
// daemon exits first; either failure shows its stderr (d.stderr, set by a
// test that starts it with startCmd).
func (d *daemon) waitWork(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		select {
		case <-d.exited:
			t.Fatalf("work exited early: %v\nstderr:\n%s", d.waitErr, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 90s\nstderr:\n%s", what, d.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retries counts the daemon's logged start-up retries.
func (d *daemon) retries() int {
	return strings.Count(d.stderr.String(), "database unreachable at start; retrying")
}

// awaitRetries waits until the daemon has logged n retries in all,
// failing the test if it exits first.
func (d *daemon) awaitRetries(t *testing.T, n int) {
	t.Helper()
	waitFor(t, 60*time.Second, "start-up retries", func() bool {
		select {
		case <-d.exited:
			t.Fatalf("exited while the database was down: %v\n%s", d.waitErr, d.stderr.String())
		default:
		}
		return d.retries() >= n
	})
}

func (d *daemon) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-d.exited:
		return d.waitErr
	case <-time.After(within):
		t.Fatalf("still running after %s\n%s", within, d.stderr.String())
		return nil
	}
}

var metricsAt = regexp.MustCompile(`metrics on http://(\S+)/metrics`)

func readyz(t *testing.T, d *daemon) int {
	t.Helper()
	var addr string
	waitFor(t, 30*time.Second, "the metrics listener", func() bool {
		m := metricsAt.FindStringSubmatch(d.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	res, err := http.Get("http://" + addr + "/readyz")
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// TestWorkWaitsForTheDatabaseAtStart (N6): `work` started while MariaDB is
// unreachable (refused, then each connection dropped at accept, then cut
// mid-handshake: about ten seconds of backoff in all) logs each retry,
// answers /readyz "not ready" meanwhile, and once the database is back
// comes up and drains every job exactly once.
func TestWorkWaitsForTheDatabaseAtStart(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	const jobs = 20
	for range jobs {
		dispatch(t, dsn, "queuety.noop")
	}
	o, proxied := viaOutage(t, dsn)
	d := startDaemon(t, "--dsn", proxied, "work", "--stop-when-empty", "--metrics-listen", "127.0.0.1:0")

	d.awaitRetries(t, 2)
	require.Equal(t, http.StatusServiceUnavailable, readyz(t, d), "not ready while the database is down")
	o.set("drop")
	d.awaitRetries(t, 4)
	o.set("cut")
	d.awaitRetries(t, 5)
	o.set("forward")

	require.NoError(t, d.wait(t, 60*time.Second), d.stderr.String())
	log := d.stderr.String()
	require.Contains(t, log, "connection refused")
	require.Contains(t, log, "database reachable; starting")
	require.Equal(t, jobs, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))
	require.Equal(t, jobs, count(t, db, "SELECT COUNT(*) FROM "+logsTable+" WHERE event = 'started'"), "each job ran once")
}

// TestWorkOnceGivesUpWithinItsTimeLimit (N6): `work --once --max-time`
// against a database that stays down retries within its time limit, then
// exits 1 naming the outage, how long it waited and the last error.
func TestWorkOnceGivesUpWithinItsTimeLimit(t *testing.T) {
	t.Parallel()
	_, proxied := viaOutage(t, newDB(t))
	d := startDaemon(t, "--dsn", proxied, "work", "--once", "--max-time", "2s")
	err := d.wait(t, 60*time.Second)
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit status: %v\n%s", err, d.stderr.String())
	require.Equal(t, 1, ee.ExitCode(), d.stderr.String())
	require.GreaterOrEqual(t, d.retries(), 1, d.stderr.String())
	require.Contains(t, d.stderr.String(), "the database stayed unreachable for 2s")
	require.Contains(t, d.stderr.String(), "connection refused")
}

// TestServeWaitsForTheDatabaseAtStart (N6): `serve` started while the
// database refuses connections answers /readyz "not ready" on its metrics
// listener, retries, and serves (ready) once the database is back.
func TestServeWaitsForTheDatabaseAtStart(t *testing.T) {
	t.Parallel()
	o, proxied := viaOutage(t, newDB(t))
	d := startDaemon(t, "--dsn", proxied, "serve", "--listen", "127.0.0.1:0", "--insecure-no-auth", "--metrics-listen", "127.0.0.1:0")
	d.awaitRetries(t, 2)
	require.Equal(t, http.StatusServiceUnavailable, readyz(t, d))
	o.set("forward")
	waitFor(t, 60*time.Second, "serve listening", func() bool {
		return strings.Contains(d.stderr.String(), "queuety serve: listening on")
	})
	require.Equal(t, http.StatusOK, readyz(t, d))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, d.wait(t, 15*time.Second), d.stderr.String())
}
