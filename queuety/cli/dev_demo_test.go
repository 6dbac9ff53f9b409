package cli_test

import (
	"net/http"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// `dev` shows the project: demo jobs (one buried on purpose), the demo
// workflows (a research run and an editorial run waiting for it, then for
// an approval; syntheses with All, Any and Quorum; a brief whose agents
// reach a quorum of two while the third fails; a local activity), a job
// bound to a worker session, and the dashboard's URL and token.
func TestDevShowsTheProject(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "10")...)
	require.Contains(t, r.stdout, "dispatched 8 demo workflows and a worker-session job")
	require.Regexp(t, `(?m)^dashboard: http://127\.0\.0\.1:\d+/ui/\noperator token: [0-9a-f]{32}$`, r.stdout)
	require.Regexp(t, `pending 0, processing 0, completed \d+, buried 2 \| worker: .*\nworker stopped\n$`, r.stdout)

	db := openDB(t, dsn)
	statuses := map[string]string{}
	rows, err := db.Queryx("SELECT name, status FROM `wp_queuety_workflows` WHERE name <> 'agent_task'")
	require.NoError(t, err)
	for rows.Next() {
		var name, status string
		require.NoError(t, rows.Scan(&name, &status))
		statuses[name] = status
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{
		"research_run": "completed", "editorial_run": "waiting_for_signal", "legal_review": "completed",
		"synthesis_all": "completed", "synthesis_any": "completed", "synthesis_quorum": "completed",
		"brief_research": "completed", "quote_lookup": "completed",
	}, statuses)
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_workflows` WHERE name = 'agent_task' AND status = 'completed'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_workflows` WHERE name = 'agent_task' AND status = 'failed'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE session_id = 'demo-render' AND status = 'completed'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_activity_executions` WHERE execution_mode = 'local' AND status = 'completed'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'buried' AND handler = 'queuety.fail'"))
}

// --listen must be loopback: dev's dashboard has a printed token only.
func TestDevRefusesAPublicListen(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := run(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "1", "--listen", "0.0.0.0:0")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "loopback", r.String())
	require.NotContains(t, r.stdout, "dispatched", "refused before anything is dispatched")
}

// dev serves /metrics: on its dashboard's listener with the operator
// token it prints (as serve does), and without a token on
// --metrics-listen; the banner names both the URL and the token.
func TestDevServesMetrics(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	var out, errb syncBuffer
	cmd := exec.Command(stockBinary(t), "--dsn", dsn, "dev", "--demo-jobs", "2", "--demo-workflows=false", "--metrics-listen", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &out, &errb
	proc := startCmd(t, cmd)
	exited := proc.exited
	banner := regexp.MustCompile(`(?m)^dashboard: http://(127\.0\.0\.1:\d+)/ui/\noperator token: ([0-9a-f]{32})\nmetrics: curl -H 'Authorization: Bearer ([0-9a-f]{32})' http://(127\.0\.0\.1:\d+)/metrics$`)
	listener := regexp.MustCompile(`dev: metrics on http://(\S+)/metrics`)
	var m, l []string
	waitFor(t, 30*time.Second, "the banner and the metrics listener", func() bool {
		m, l = banner.FindStringSubmatch(out.String()), listener.FindStringSubmatch(errb.String())
		return m != nil && l != nil
	})
	require.Equal(t, m[1], m[4])
	require.Equal(t, m[2], m[3])
	status, body := scrape(t, m[1], "/metrics", "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	for _, tc := range []struct{ addr, token string }{{m[1], m[2]}, {l[1], ""}} {
		status, body = scrape(t, tc.addr, "/metrics", tc.token)
		require.Equal(t, http.StatusOK, status, body)
		s := samples(t, body)
		require.Equal(t, 1.0, s[`queuety_database_up`], body)
		require.Contains(t, s, `queuety_worker_slots{state="idle"}`)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("dev still running 30s after SIGTERM\n%s", errb.String())
	}
	require.NoError(t, proc.waitErr, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.Contains(t, out.String(), "worker stopped")
}
