package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
)

// TestAcrossServerFallbackHasItsOwnTime: one database's jobs table under
// a metadata lock (LOCK TABLES, an ALTER) holds the batched read of the
// server until its timeout; each database is then read with a timeout of
// its own, so the other database answers and only the locked one's sites
// get nothing.
func TestAcrossServerFallbackHasItsOwnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsnA, dsnB := testdb.New(t), testdb.New(t)
	a, b := siteClient(t, dsnA, "wp_"), siteClient(t, dsnB, "wp_")
	dispatchToSite(t, b, "b", 2)
	target := func(c *Client, dsn string) lookTarget {
		_, database, err := store.ServerOf(dsn)
		require.NoError(t, err)
		return lookTarget{w: &Worker{store: c.store}, database: database}
	}
	targets := []lookTarget{target(a, dsnA), target(b, dsnB)}

	locker, err := sqlx.Open("mysql", dsnA)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Close() })
	conn, err := locker.Connx(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() }) // before the databases are dropped: it releases the lock
	_, err = conn.ExecContext(ctx, "LOCK TABLES wp_queuety_jobs WRITE")
	require.NoError(t, err)

	pending := map[string]int{}
	acrossServer(ctx, testLogger(), targets, 2*time.Second, "sites: open jobs not read",
		func(rctx context.Context, group []lookTarget) ([][]store.MetricsJobCount, error) {
			return store.OpenJobsAcross(rctx, a.db, tableParts(group))
		},
		func(group []lookTarget, jobs [][]store.MetricsJobCount) {
			for i, t := range group {
				for _, j := range jobs[i] {
					pending[t.database] += int(j.N)
				}
			}
		})
	require.Equal(t, map[string]int{targets[1].database: 2}, pending, "the unlocked database answers; the locked one does not")
}

// TestSitesReregisterLeavesTheSiteFree: writing again the registration of
// a site whose row was gone holds the site's lock only to check its
// worker, not over the heartbeat's round trip (up to 10 s): with the
// heartbeat held up by a row lock, the site's lock is free, and Status
// and the looks, which take it, go on.
func TestSitesReregisterLeavesTheSiteFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	siteClient(t, dsn, "wp_")
	reg := (&siteRuns{runs: map[string]int{}}).registry()
	s := runSites(t, SitesConfig{Discover: func(context.Context) ([]Site, error) {
		return []Site{{Name: "a", Config: Config{DSN: dsn, TablePrefix: "wp_", RescueSchedule: "off", ShutdownGrace: time.Second, Logger: testLogger()}}}, nil
	}, Registry: func(Site) (*Registry, error) { return reg, nil }})
	<-s.Started()
	s.mu.Lock()
	r := s.sites["a"]
	s.mu.Unlock()
	r.mu.Lock()
	w := r.worker
	r.mu.Unlock()
	require.NotNil(t, w, "site a started: %+v", s.Status())

	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	var id string
	require.NoError(t, tx.GetContext(ctx, &id, "SELECT worker_id FROM wp_queuety_workers WHERE worker_id = ? FOR UPDATE", w.id))

	_, database, err := store.ServerOf(dsn)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.reregister(ctx, []lookTarget{{r: r, w: w, database: database}}, []bool{false})
	}()
	waitFor(t, time.Minute, "the heartbeat waiting for the row", func() bool {
		var n int
		// The site's statements name its database, or run in it.
		require.NoError(t, db.GetContext(ctx, &n, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE %workers%' AND (DB = ? OR INFO LIKE ?)",
			database, "%"+database+"%"))
		return n > 0
	})
	locked := !r.mu.TryLock()
	if !locked {
		r.mu.Unlock()
	}
	require.False(t, locked, "the site's lock is free over the heartbeat")
	require.Equal(t, SiteRunning, siteState(s, "a"))
	require.NoError(t, tx.Rollback())
	<-done
}
