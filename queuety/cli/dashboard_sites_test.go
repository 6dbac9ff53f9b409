package cli_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// serve --network and work --network --http serve one dashboard for every
// subsite: the all-sites overview at /ui/ (and / leads there), each
// subsite's pages and actions under /ui/sites/<key>/ on that subsite's
// tables; /readyz answers. The worker token and --no-ui are refused with
// many sites, naming the flag.
func TestDashboardOfANetwork(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/")
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
	}
	runOK(t, on(dsn, "--prefix", "wp_2_", "dispatch", "--queue", "held", "report.build")...)
	wpConfig := networkWPConfig(t, dsn)
	const ot = "ot-0123456789abcdef"
	env := []string{"QUEUETY_WORKER_TOKEN=", "QUEUETY_OPERATOR_TOKEN=" + ot}

	d := startListening(t, exec.Command(bin, "serve", "--network", wpConfig, "--listen", "127.0.0.1:0"), env...)
	require.Contains(t, d.stderr.String(), "the dashboard of 3 sites listening on")
	status, body := scrape(t, d.addr, "/", ot) // follows the redirect to /ui/
	require.Equal(t, http.StatusOK, status, body)
	for _, key := range []string{"blog-1", "blog-2", "blog-3"} {
		require.Contains(t, body, `<tr data-site="`+key+`"`)
	}
	require.Contains(t, body, `<a href="/ui/sites/blog-2/jobs?status=pending">1</a>`)
	status, body = scrape(t, d.addr, "/ui/sites/blog-2/jobs?queue=held", ot)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "report.build")
	_, body = scrape(t, d.addr, "/ui/sites/blog-3/jobs?queue=held", ot)
	require.NotContains(t, body, "report.build", "blog 3's list is blog 3's")
	status, _ = scrape(t, d.addr, "/readyz", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = scrape(t, d.addr, "/ui/", "")
	require.Equal(t, http.StatusOK, status, "the login page")
	require.Equal(t, http.StatusSeeOther, post(t, d.addr, "/ui/sites/blog-2/queues/held/pause", ot))
	db := openDB(t, dsn)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wp_2_queuety_queue_states WHERE queue = 'held'"))
	require.Equal(t, 0, count(t, db, "SELECT COUNT(*) FROM wp_queuety_queue_states"))
	d.stop(t)

	w := startListening(t, exec.Command(bin, "work", "--network", wpConfig, "--http", "127.0.0.1:0", "--poll-interval", "20ms",
		"--rescue-schedule", "off", "--queue", "default"), env...)
	require.Contains(t, w.stderr.String(), "queuety work: the dashboard of the sites listening on")
	var rows string
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(rows, `<tr data-site="`) < 3 { // the sites start in the background
		require.False(t, time.Now().After(deadline), "the overview lists the three sites\n%s", w.stderr.String())
		_, rows = scrape(t, w.addr, "/ui/", ot)
		time.Sleep(50 * time.Millisecond)
	}
	// A served site's page shows its worker, this process's.
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(body, `<td class="runtime">go</td>`) {
		require.False(t, time.Now().After(deadline), "blog 2's worker\n%s", body)
		_, body = scrape(t, w.addr, "/ui/sites/blog-2/workers", ot)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, http.StatusSeeOther, post(t, w.addr, "/ui/sites/blog-3/queues/held/pause", ot))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wp_3_queuety_queue_states WHERE queue = 'held'"))
	status, _ = scrape(t, w.addr, "/readyz", "")
	require.Equal(t, http.StatusOK, status)
	w.stop(t)

	r := run(t, "serve", "--network", wpConfig, "--listen", "127.0.0.1:0", "--operator-token", ot, "--worker-token", "wt-0123456789abcdef")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--worker-token (QUEUETY_WORKER_TOKEN) with --network or --sites", r.String())
	r = run(t, "work", "--network", wpConfig, "--http", "127.0.0.1:0", "--operator-token", ot, "--no-ui")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--no-ui with --network or --sites", r.String())
}
