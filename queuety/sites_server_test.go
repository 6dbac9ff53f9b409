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
