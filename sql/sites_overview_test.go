package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestSiteCountsAcross: one statement reads the overview's row of sites on
// three prefixes of one database and on another database of the server
// (tables named with their databases), each count by status, the stale
// rows by each site's own cutoff, the oldest due pending job's wait; over
// more sites than one statement takes, and with a status past the cap.
func TestSiteCountsAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	var database string
	require.NoError(t, e.db.GetContext(e.ctx, &database, "SELECT DATABASE()"))
	var looks []SiteCountsLook
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		s := migratedStore(t, e, e.db, p)
		looks = append(looks, SiteCountsLook{SiteTables: SiteTables{Store: s, Database: database}})
	}
	// A site in another database, read through e.db.
	otherDSN := testdb.New(t)
	otherDB, err := Open(e.ctx, otherDSN, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = otherDB.Close() })
	other := migratedStore(t, e, otherDB, "wp_")
	_, otherName, err := ServerOf(otherDSN)
	require.NoError(t, err)
	looks = append(looks, SiteCountsLook{SiteTables: SiteTables{Store: other, Database: otherName}})

	now := e.clk.Now().UTC().Truncate(time.Second)
	insert := func(s *Store, status string, available, reserved time.Time) {
		t.Helper()
		var res any
		if !reserved.IsZero() {
			res = DateTime(reserved)
		}
		_, err := s.db.ExecContext(e.ctx, render("INSERT INTO {jobs} (queue, handler, payload, status, available_at, reserved_at, created_at) VALUES ('default', 'h', '{}', ?, ?, ?, ?)", s.tables),
			status, DateTime(available), res, DateTime(now))
		require.NoError(t, err)
	}
	s0 := looks[0].Store
	insert(s0, "pending", now.Add(-2*time.Hour), time.Time{}) // the oldest due
	insert(s0, "pending", now, time.Time{})
	insert(s0, "pending", now.Add(time.Hour), time.Time{}) // not due yet
	insert(s0, "processing", now, now)                     // heard from
	insert(s0, "processing", now, now.Add(-20*time.Minute))
	insert(s0, "failed", now, time.Time{})
	insert(s0, "failed", now, time.Time{})
	insert(s0, "buried", now, time.Time{})
	insert(s0, "completed", now, time.Time{})
	s2 := looks[2].Store
	insert(s2, "pending", now.Add(time.Hour), time.Time{}) // pending, none due
	insert(s2, "processing", now, now.Add(-20*time.Minute))
	for range 4 {
		insert(other, "buried", now, time.Time{})
	}
	looks[0].StaleBefore = now.Add(-10 * time.Minute)
	looks[1].StaleBefore = now.Add(-10 * time.Minute)
	looks[2].StaleBefore = now.Add(-30 * time.Minute) // its stale timeout is longer: nothing stale
	looks[3].StaleBefore = now.Add(-10 * time.Minute)

	counts, err := SiteCountsAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Len(t, counts, 4)
	c := counts[0]
	require.Equal(t, [5]int64{3, 2, 2, 1, 1}, [5]int64{c.Pending, c.Processing, c.Failed, c.Buried, c.Stale})
	require.True(t, c.OldestPending.Valid)
	// The server's NOW() is the real clock, the fake clock's start.
	require.InDelta(t, 2*time.Hour.Seconds(), float64(c.OldestPending.Int64), 60)
	require.Equal(t, SiteCounts{Site: 1}, counts[1], "an empty site")
	c = counts[2]
	require.Equal(t, [5]int64{1, 1, 0, 0, 0}, [5]int64{c.Pending, c.Processing, c.Failed, c.Buried, c.Stale})
	require.False(t, c.OldestPending.Valid, "nothing due")
	require.Equal(t, int64(4), counts[3].Buried, "the other database's site")

	// More sites than a statement takes: each answer lands on its site.
	var many []SiteCountsLook
	for i := range siteCountsPerStatement + 5 {
		many = append(many, looks[i%len(looks)])
	}
	all, err := SiteCountsAcross(e.ctx, e.db, many)
	require.NoError(t, err)
	for i, got := range all {
		want := counts[i%len(looks)]
		want.Site = i
		// The age is the server's NOW() minus a row's: a second may pass
		// between the two reads.
		require.Equal(t, want.OldestPending.Valid, got.OldestPending.Valid, "site %d", i)
		require.InDelta(t, want.OldestPending.Int64, got.OldestPending.Int64, 60, "site %d", i)
		want.OldestPending, got.OldestPending = sql.NullInt64{}, sql.NullInt64{}
		require.Equal(t, want, got, "site %d", i)
	}

	// A dropped database fails the statement, naming it.
	_, err = e.db.ExecContext(e.ctx, "DROP DATABASE `"+otherName+"`")
	require.NoError(t, err)
	_, err = SiteCountsAcross(e.ctx, e.db, looks)
	require.ErrorContains(t, err, otherName)
	_, err = SiteCountsAcross(e.ctx, e.db, looks[:3])
	require.NoError(t, err, "the others still answer")
}

// TestSiteCountsCap: a status with more rows than the cap reads cap+1, the
// others exactly.
func TestSiteCountsCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.db.ExecContext(ctx, render("INSERT INTO {jobs} (queue, handler, payload, status, available_at, created_at) SELECT 'default', 'h', '{}', 'pending', NOW(), NOW() FROM seq_1_to_100005", e.tables))
	require.NoError(t, err)
	e.exec("INSERT INTO {jobs} (queue, handler, payload, status, available_at, created_at) VALUES ('default', 'h', '{}', 'buried', NOW(), NOW())")
	counts, err := SiteCountsAcross(ctx, e.db, []SiteCountsLook{{SiteTables: SiteTables{Store: e.s}, StaleBefore: e.clk.Now()}})
	require.NoError(t, err)
	require.Equal(t, int64(SiteCountsCap+1), counts[0].Pending)
	require.Equal(t, int64(1), counts[0].Buried)
	require.True(t, counts[0].OldestPending.Valid)
}
