package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// serve refuses to start without the operator token, and runs without auth
// only on a loopback address; each error names the flag to fix. The
// checks come before any connection, so no database is needed.
func TestServeRefusesUnsafeAuth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--worker-token=", "--operator-token="}, []string{"QUEUETY_OPERATOR_TOKEN", "--insecure-no-auth"}},
		{[]string{"serve", "--worker-token=w", "--operator-token="}, []string{"--operator-token", "QUEUETY_OPERATOR_TOKEN"}},
		// No worker token is fine (the worker plane is off); the operator
		// token is still checked.
		{[]string{"serve", "--worker-token=", "--operator-token=o"}, []string{"--operator-token (QUEUETY_OPERATOR_TOKEN) is 1 bytes"}},
		{[]string{"serve", "--worker-token=same", "--operator-token=same"}, []string{"--worker-token and --operator-token are the same"}},
		{[]string{"serve", "--insecure-no-auth", "--listen", "0.0.0.0:8080", "--worker-token=", "--operator-token="}, []string{"--insecure-no-auth", "loopback", `"0.0.0.0:8080"`}},
		{[]string{"serve", "--insecure-no-auth", "--listen", ":8080", "--worker-token=", "--operator-token="}, []string{"--insecure-no-auth", "loopback"}},
		// Guessable or never-matching tokens.
		{[]string{"serve", "--worker-token=w", "--operator-token=" + strings.Repeat("o", 16)}, []string{"--worker-token (QUEUETY_WORKER_TOKEN) is 1 bytes", "at least 16"}},
		{[]string{"serve", "--worker-token=wt-0123456789abcdef", "--operator-token=  o  "}, []string{"--operator-token (QUEUETY_OPERATOR_TOKEN) is 1 bytes"}},
		{[]string{"serve", "--worker-token=   ", "--operator-token=" + strings.Repeat("o", 16)}, []string{"--worker-token (QUEUETY_WORKER_TOKEN) is only whitespace"}},
		{[]string{"work", "--http", "127.0.0.1:0", "--worker-token=short", "--operator-token=" + strings.Repeat("o", 16)}, []string{"--worker-token (QUEUETY_WORKER_TOKEN) is 5 bytes"}},
		// N17: long enough but typed, not generated.
		{[]string{"serve", "--worker-token=wt-0123456789abcdef", "--operator-token=" + strings.Repeat("a", 16)}, []string{"--operator-token (QUEUETY_OPERATOR_TOKEN) holds only 1 different characters", "guessable"}},
		{[]string{"serve", "--worker-token=" + strings.Repeat("ab", 20), "--operator-token=ot-0123456789abcdef"}, []string{"--worker-token (QUEUETY_WORKER_TOKEN) holds only 2 different characters"}},
	}
	for _, c := range cases {
		r := run(t, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		for _, w := range c.want {
			require.Contains(t, r.stderr, w, r.String())
		}
	}
}

// serve checks the schema at start, as work does, instead of answering
// 500 to every worker call on an unmigrated database.
func TestServeRefusesUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := run(t, on(dsn, "serve", "--listen", "127.0.0.1:0",
		"--worker-token", "wt-0123456789abcdef", "--operator-token", "ot-0123456789abcdef")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "does not exist: run `queuety migrate`", r.String())
	require.NotContains(t, r.stderr, "listening", r.String())
}

// The stock binary serves the API with tokens from the environment:
// cluster info, a registration, the operator metrics (local activities and
// worker sessions), then SIGTERM stops it with exit 0.
func TestServeSubprocess(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)

	d := startListening(t, exec.Command(bin, "--dsn", dsn, "serve", "--listen", "127.0.0.1:0"),
		"QUEUETY_WORKER_TOKEN=wt-0123456789abcdef", "QUEUETY_OPERATOR_TOKEN=ot-0123456789abcdef")
	addr := d.addr
	call := func(method, path, token string, body any, headers map[string]string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(b)
		}
		rq, err := http.NewRequest(method, "http://"+addr+path, rd)
		require.NoError(t, err)
		rq.Header.Set("Authorization", "Bearer "+token)
		for k, v := range headers {
			rq.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(rq)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
		return res.StatusCode, m
	}

	status, info := call("GET", "/api/cluster/info", "wt-0123456789abcdef", nil, nil)
	require.Equal(t, http.StatusOK, status)
	wp := info["worker_protocol"].(map[string]any)
	require.Equal(t, "1.13", wp["version"])
	require.Equal(t, true, info["capabilities"].(map[string]any)["activity_tasks"])

	worker := map[string]string{"X-Durable-Workflow-Protocol-Version": "1.13"}
	status, reg := call("POST", "/api/worker/register", "wt-0123456789abcdef", map[string]any{"worker_id": "ext-1", "task_queue": "default", "runtime": "python"}, worker)
	require.Equal(t, http.StatusCreated, status, "%v", reg)
	status, _ = call("POST", "/api/worker/register", "ot-0123456789abcdef", map[string]any{"worker_id": "ext-1", "task_queue": "default"}, worker)
	require.Equal(t, http.StatusForbidden, status)

	status, m := call("GET", "/api/system/operator-metrics", "ot-0123456789abcdef", nil, map[string]string{"X-Durable-Workflow-Control-Plane-Version": "2"})
	require.Equal(t, http.StatusOK, status, "%v", m)
	om := m["operator_metrics"].(map[string]any)
	require.Contains(t, om["activities"], "local")
	require.Contains(t, om["activities"], "local_open")
	require.Contains(t, om["activities"], "local_attempts")
	require.Contains(t, om["activities"], "queued_open")
	require.Contains(t, om["worker_sessions"], "orphaned")

	d.stop(t)
}

// listening is a daemon subprocess serving the HTTP API.
type listening struct {
	cmd     *exec.Cmd
	addr    string
	stderr  *syncBuffer
	exited  chan struct{}
	waitErr error
}

// startListening starts cmd (serve, or work --http) with env added and
// waits until it prints the address it listens on.
func startListening(t *testing.T, cmd *exec.Cmd, env ...string) *listening {
	t.Helper()
	d := &listening{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = io.Discard, d.stderr
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
	// The API line, not the metrics listener's (which starts first).
	pattern := regexp.MustCompile(`(?:listening|HTTP API) on http://(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := pattern.FindStringSubmatch(d.stderr.String()); m != nil {
			d.addr = m[1]
			return d
		}
		select {
		case <-d.exited:
			t.Fatalf("%s exited early: %v\nstderr:\n%s", cmd.Args, d.waitErr, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after 30s\nstderr:\n%s", cmd.Args, d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and requires exit 0 within 15 s.
func (d *listening) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.exited:
		var ee *exec.ExitError
		if errors.As(d.waitErr, &ee) {
			t.Fatalf("exited with %v after SIGTERM\nstderr:\n%s", ee, d.stderr.String())
		}
		require.NoError(t, d.waitErr)
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after SIGTERM\nstderr:\n%s", d.stderr.String())
	}
}

// serve starts with the operator token alone (it used to demand a worker
// token the operator never uses): the start-up log says the worker plane
// is off, a worker call is refused with that reason, and / sends a
// browser to the dashboard.
func TestServeWithoutWorkerToken(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	d := startListening(t, exec.Command(bin, "--dsn", dsn, "serve", "--listen", "127.0.0.1:0"),
		"QUEUETY_WORKER_TOKEN=", "QUEUETY_OPERATOR_TOKEN=ot-0123456789abcdef")
	rq, err := http.NewRequest("POST", "http://"+d.addr+"/api/worker/register", strings.NewReader(`{"worker_id":"w1","task_queue":"q"}`))
	require.NoError(t, err)
	rq.Header.Set("Authorization", "Bearer ot-0123456789abcdef")
	rq.Header.Set("X-Durable-Workflow-Protocol-Version", "1.13")
	res, err := http.DefaultClient.Do(rq)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "%s", raw)
	require.Contains(t, string(raw), "worker plane is off")

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noRedirect.Get("http://" + d.addr + "/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, "/ui/", res.Header.Get("Location"))
	require.Contains(t, d.stderr.String(), "the worker plane is off")
	d.stop(t)
}
