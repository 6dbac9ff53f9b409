package queuety

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestSiteClients: the Clients of three prefixes of one database and one
// of another database of the server share one pool and each reads its own
// tables; a site whose database is gone
// answers its error, and the same error at once until Retry has passed
// (the database created meanwhile is not tried again); Keep drops the
// sites no longer listed and closes their pool.
// pendingOf counts c's pending jobs through its Store, which on a
// server's pool names its database (countStatus's statement would not).
func pendingOf(t *testing.T, c *Client) int {
	t.Helper()
	jobs, err := c.Jobs(context.Background(), JobFilter{Status: "pending", Limit: 100})
	require.NoError(t, err)
	return len(jobs)
}

func TestSiteClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	var sites []Site
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		c := siteClient(t, dsn, p)
		dispatchToSite(t, c, p, len(sites)+1) // 1, 2, 3 jobs
		sites = append(sites, Site{Name: p, Config: Config{DSN: dsn, TablePrefix: p, Logger: testLogger()}})
	}
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.DBName += "_missing"
	missing := Site{Name: "missing", Config: Config{DSN: cfg.FormatDSN(), TablePrefix: "wp_", Logger: testLogger()}}

	sc := NewSiteClients(SiteClientsConfig{Retry: time.Hour, Logger: testLogger()})
	t.Cleanup(func() { _ = sc.Close() })
	var clients []*Client
	for i, site := range sites {
		c, err := sc.Client(ctx, site)
		require.NoError(t, err)
		require.Equal(t, i+1, pendingOf(t, c), site.Name)
		again, err := sc.Client(ctx, site)
		require.NoError(t, err)
		require.Same(t, c, again, "opened once")
		clients = append(clients, c)
	}
	require.Same(t, clients[0].db, clients[2].db, "one pool for the database")
	otherDSN := testdb.New(t)
	dispatchToSite(t, siteClient(t, otherDSN, "wp_"), "other", 4)
	other, err := sc.Client(ctx, Site{Name: "other", Config: Config{DSN: otherDSN, TablePrefix: "wp_", Logger: testLogger()}})
	require.NoError(t, err)
	require.Same(t, clients[0].db, other.db, "one pool for the server")
	require.Equal(t, 4, pendingOf(t, other), "the other database's tables")
	require.Equal(t, 1, pendingOf(t, clients[0]))
	require.NoError(t, clients[1].Close())
	require.Equal(t, 1, pendingOf(t, clients[0]), "a Client's Close leaves the shared pool open")

	_, err = sc.Client(ctx, missing)
	require.ErrorContains(t, err, "Unknown database")
	admin, err := sqlx.Open("mysql", testdb.ServerDSN())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS `" + cfg.DBName + "`")
		_ = admin.Close()
	})
	_, err = admin.Exec("CREATE DATABASE `" + cfg.DBName + "`")
	require.NoError(t, err)
	_, err = sc.Client(ctx, missing)
	require.ErrorContains(t, err, "Unknown database", "not tried again within Retry")
	fresh := NewSiteClients(SiteClientsConfig{Logger: testLogger()})
	t.Cleanup(func() { _ = fresh.Close() })
	_, err = fresh.Client(ctx, missing)
	require.NoError(t, err, "the database exists now")

	sc.Keep(sites[:1])
	c, err := sc.Client(ctx, sites[0])
	require.NoError(t, err)
	require.Same(t, clients[0], c, "a kept site keeps its Client")
	sc.Keep(nil)
	_, err = clients[0].Stats(ctx)
	require.ErrorContains(t, err, "database is closed", "a pool no site uses is closed")
	c, err = sc.Client(ctx, sites[0])
	require.NoError(t, err, "and opened again when asked")
	require.Equal(t, 1, pendingOf(t, c))
}

// TestSiteClientsKeepDuringOpen: a Keep that drops a server's pool while
// a Client is opening it leaves no pool behind: the Client handed out
// works (it is opened on the pool listed now), and after Close every
// connection promised to a pool is given back.
func TestSiteClientsKeepDuringOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	siteClient(t, dsn, "wp_")
	site := Site{Name: "wp_", Config: Config{DSN: dsn, TablePrefix: "wp_", Logger: testLogger()}}
	sc := NewSiteClients(SiteClientsConfig{Logger: testLogger()})
	t.Cleanup(func() { _ = sc.Close() })
	for i := range 200 {
		sc.Keep(nil) // nothing open: the Client below opens its pool
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := sc.Client(ctx, site)
			assert.NoError(t, err, "round %d: the Client opened beside a Keep", i)
		})
		wg.Go(func() { sc.Keep(nil) })
		wg.Wait()
		c, err := sc.Client(ctx, site)
		require.NoError(t, err)
		_, err = c.Stats(ctx)
		require.NoError(t, err, "round %d: the Client kept works", i)
	}
	require.NoError(t, sc.Close())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.Zero(t, sc.conns, "every pool opened was closed")
}
