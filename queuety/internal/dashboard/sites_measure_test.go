//go:build measure

package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	store "github.com/queuety-go/queuety/sql"
)

// TestMeasureSitesOverview is a measurement, not a check: it makes
// QUEUETY_MEASURE_DATABASES (default 50) databases of
// QUEUETY_MEASURE_PREFIXES (default 10) sites each, every site's jobs
// table holding 50 rows (45 completed, 3 pending, a buried and a
// processing one), and prints how long the all-sites overview of them
// takes: the first page (each database's pool opened) and ten more (the
// counts read again each time), the page's size, and the overview's
// statements alone (one every 100 sites). Built only with the tag measure;
// it asserts nothing about the figures.
//
//	go test -tags measure -count=1 -run TestMeasureSitesOverview -v ./queuety/internal/dashboard/
func TestMeasureSitesOverview(t *testing.T) {
	dbs, prefixes := envInt(t, "QUEUETY_MEASURE_DATABASES", 50), envInt(t, "QUEUETY_MEASURE_PREFIXES", 10)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	var sites []queuety.Site
	start := time.Now()
	for d := range dbs {
		dsn := testdb.New(t)
		c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: "wp_", Logger: log})
		require.NoError(t, err)
		_, err = c.Migrate(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		db, err := sqlx.Connect("mysql", dsn)
		require.NoError(t, err)
		for p := range prefixes {
			prefix := "wp_"
			if p > 0 {
				prefix = fmt.Sprintf("wp_%d_", p+1)
				_, err = db.Exec("CREATE TABLE `" + prefix + "queuety_jobs` LIKE wp_queuety_jobs")
				require.NoError(t, err)
			}
			_, err = db.Exec("INSERT INTO `" + prefix + "queuety_jobs` (queue, handler, payload, status, available_at, reserved_at, created_at) " +
				"SELECT 'default', 'h', '{}', CASE WHEN seq <= 3 THEN 'pending' WHEN seq = 4 THEN 'buried' WHEN seq = 5 THEN 'processing' ELSE 'completed' END, " +
				"NOW(), NOW(), NOW() FROM seq_1_to_50")
			require.NoError(t, err)
			sites = append(sites, queuety.Site{Name: fmt.Sprintf("db%02d %s", d, prefix), Config: queuety.Config{DSN: dsn, TablePrefix: prefix, Logger: log}})
		}
		require.NoError(t, db.Close())
	}
	t.Logf("%d sites in %d databases made in %v", len(sites), dbs, time.Since(start).Round(time.Millisecond))

	src := newListedSites(t, sites)
	d, err := dashboard.New(dashboard.Config{Sites: src, OperatorToken: operatorToken, OverviewTTL: time.Nanosecond, SiteTimeout: 30 * time.Second})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", d)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv.URL)
	b.login()
	read := func() (time.Duration, int) {
		t0 := time.Now()
		resp, body := b.do("GET", "/ui/", nil)
		el := time.Since(t0)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		rows := siteRows(t, body)
		require.Len(t, rows, len(sites))
		for _, r := range rows {
			require.NotContains(t, r.cells["why"], "unreachable", r.key)
		}
		return el, len(body)
	}
	cold, size := read()
	var warm []time.Duration
	for range 10 {
		el, _ := read()
		warm = append(warm, el)
	}
	slices.Sort(warm)

	// The statements alone: every site's row read as the overview reads
	// them, one statement every 100 sites on the one server.
	looks := make([]store.SiteCountsLook, len(sites))
	for i, site := range sites {
		v, err := src.Open(ctx, site.Name)
		require.NoError(t, err)
		st := clientstore.Of(v.Client)
		_, db, err := store.ServerOf(site.Config.DSN)
		require.NoError(t, err)
		looks[i] = store.SiteCountsLook{SiteTables: store.SiteTables{Store: st, Database: db}, StaleBefore: st.Now().Add(-10 * time.Minute)}
	}
	handle := looks[0].Store.DB()
	var stmts []time.Duration
	for range 10 {
		t0 := time.Now()
		_, err := store.SiteCountsAcross(ctx, handle, looks)
		require.NoError(t, err)
		stmts = append(stmts, time.Since(t0))
	}
	slices.Sort(stmts)
	t.Logf("all-sites overview of %d sites (%d databases, one server): first page %v (pools opened), then min %v median %v max %v over %d pages; page %d KB; its %d statements alone: min %v median %v max %v",
		len(sites), dbs, cold.Round(time.Millisecond), warm[0].Round(time.Millisecond), warm[len(warm)/2].Round(time.Millisecond),
		warm[len(warm)-1].Round(time.Millisecond), len(warm), size/1024, (len(sites)+99)/100,
		stmts[0].Round(time.Millisecond), stmts[len(stmts)/2].Round(time.Millisecond), stmts[len(stmts)-1].Round(time.Millisecond))
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}
