package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestAnyDueAcross: one statement answers the idle look of many prefixes
// of one database, each exactly as AnyDue would for that prefix alone.
func TestAnyDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	var looks []DueLook
	var stores []*Store
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_"} {
		tables := mustResolve(t, Naming{DBPrefix: p})
		s, err := New(e.db, tables, e.clk)
		require.NoError(t, err)
		_, err = s.Migrate(e.ctx)
		require.NoError(t, err)
		stores = append(stores, s)
		looks = append(looks, DueLook{Store: s, Queues: []string{"default"}})
	}
	due, err := AnyDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false}, due, "empty tables")

	insert := func(s *Store, queue, status, avail string) {
		_, err := e.db.ExecContext(e.ctx, render("INSERT INTO {jobs} (queue, handler, payload, status, available_at, created_at) VALUES (?, 'h', '{}', ?, "+avail+", NOW())", s.tables), queue, status)
		require.NoError(t, err)
	}
	insert(stores[1], "default", "pending", "NOW()")                     // due
	insert(stores[2], "default", "pending", "NOW() + INTERVAL 1 HOUR")   // not yet due
	insert(stores[3], "other", "pending", "NOW()")                       // a queue not served
	insert(stores[0], "default", "completed", "NOW() - INTERVAL 1 HOUR") // done
	due, err = AnyDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)
	for i, s := range stores {
		one, err := s.AnyDue(e.ctx, looks[i].Queues)
		require.NoError(t, err)
		require.Equal(t, one, due[i], "site %d agrees with its own look", i)
	}

	looks[3].Queues = []string{"default", "other"}
	looks[1].Queues = nil // a site serving nothing is not asked
	due, err = AnyDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, true}, due)
}

// TestNetworkBlogs: the subsites WordPress serves, archived, deleted and
// spam ones left out, from wp_blogs as WordPress makes it.
func TestNetworkBlogs(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	testdb.Multisite(t, e.dsn, "wp_", "/a/", "/b/", "/c/", "/d/")
	_, err := e.db.ExecContext(e.ctx, "UPDATE wp_blogs SET archived = 1 WHERE path = '/b/'")
	require.NoError(t, err)
	_, err = e.db.ExecContext(e.ctx, "UPDATE wp_blogs SET deleted = 1 WHERE path = '/c/'")
	require.NoError(t, err)
	_, err = e.db.ExecContext(e.ctx, "UPDATE wp_blogs SET spam = 1 WHERE path = '/d/'")
	require.NoError(t, err)
	blogs, err := NetworkBlogs(e.ctx, e.db, "wp_")
	require.NoError(t, err)
	require.Len(t, blogs, 2)
	require.Equal(t, Blog{ID: 1, SiteID: 1, Domain: "example.test", Path: "/"}, blogs[0])
	require.Equal(t, int64(2), blogs[1].ID)
	require.Equal(t, "/a/", blogs[1].Path)

	_, err = NetworkBlogs(e.ctx, e.db, "bad`")
	require.ErrorContains(t, err, "only letters")
	_, err = NetworkBlogs(e.ctx, e.db, "nosuch_")
	require.ErrorContains(t, err, "nosuch_blogs")

	have, err := TablesPresent(e.ctx, e.db, []string{"wp_blogs", "wp_2_queuety_jobs", "wp_queuety_jobs"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"wp_blogs": true}, have)
}
