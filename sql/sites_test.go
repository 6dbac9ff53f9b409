package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
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

	looker := NewDueLooker(e.db)
	defer looker.Close()
	for range 2 { // prepared, then run again
		again, err := looker.AnyDue(e.ctx, looks)
		require.NoError(t, err)
		require.Equal(t, due, again)
	}

	looks[3].Queues = []string{"default", "other"}
	looks[1].Queues = nil // a site serving nothing is not asked
	due, err = AnyDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, true}, due)
	again, err := looker.AnyDue(e.ctx, looks)
	require.NoError(t, err)
	require.Equal(t, due, again, "a new statement for other queues")
}

// TestWebhooksAcross: one statement reads the webhooks of many prefixes,
// each site's rows exactly as its own Webhooks returns them, also when the
// statement runs on a connection to another database (tables named with
// their database).
func TestWebhooksAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	var sites []SiteTables
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		s := migratedStore(t, e, e.db, p)
		sites = append(sites, SiteTables{Store: s})
	}
	_, err := sites[0].Store.AddWebhook(e.ctx, "job.failed", "http://a.test/1")
	require.NoError(t, err)
	_, err = sites[2].Store.AddWebhook(e.ctx, "job.buried", "http://c.test/1")
	require.NoError(t, err)
	_, err = sites[2].Store.AddWebhook(e.ctx, "job.failed", "http://c.test/2")
	require.NoError(t, err)

	hooks, err := WebhooksAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Len(t, hooks, 3)
	for i, s := range sites {
		one, err := s.Store.Webhooks(e.ctx)
		require.NoError(t, err)
		require.Equal(t, one, hooks[i], "site %d agrees with its own read", i)
	}
	require.Empty(t, hooks[1])
	require.Len(t, hooks[2], 2)

	var database string
	require.NoError(t, e.db.GetContext(e.ctx, &database, "SELECT DATABASE()"))
	for i := range sites {
		sites[i].Database = database
	}
	named, err := WebhooksAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Equal(t, hooks, named)

	sites[1].Database = "no`such"
	_, err = WebhooksAcross(e.ctx, e.db, sites)
	require.ErrorContains(t, err, "cannot be quoted")
}

// TestHeartbeatWorkersAcross: the batched heartbeat writes each site's
// worker row as HeartbeatWorker writes it, over more sites than one
// statement joins (61 tables), and reports the sites whose registration is
// gone, writing nothing for them.
func TestHeartbeatWorkersAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	var database string
	require.NoError(t, e.db.GetContext(e.ctx, &database, "SELECT DATABASE()"))
	const n = beatsPerStatement + 3
	at := e.clk.Now().UTC().Truncate(time.Second)
	var beats []WorkerBeat
	var stores []*Store
	for i := range n {
		s := migratedStore(t, e, e.db, fmt.Sprintf("wp_%d_", i+2))
		stores = append(stores, s)
		id := fmt.Sprintf("w%d", i)
		if i != 5 { // site 5's worker was deregistered
			require.NoError(t, s.Sessions().UpsertWorker(e.ctx, WorkerRow{Namespace: "default", WorkerID: id, TaskQueue: "q",
				Queues: StringList{"q"}, Runtime: "go", RegisteredAt: at.Add(-time.Hour), UpdatedAt: at.Add(-time.Hour)}))
		}
		beats = append(beats, WorkerBeat{SiteTables: SiteTables{Store: s, Database: database}, Namespace: "default", WorkerID: id,
			At: at, ProcessMetrics: sql.NullString{String: fmt.Sprintf(`{"n":%d}`, i), Valid: true}})
	}
	registered, changed, err := HeartbeatWorkersAcross(e.ctx, e.db, beats)
	require.NoError(t, err)
	require.EqualValues(t, n-1, changed, "one row changed a registered site")
	for i, s := range stores {
		require.Equal(t, i != 5, registered[i], "site %d", i)
		got, err := s.Sessions().GetWorker(e.ctx, "default", fmt.Sprintf("w%d", i))
		require.NoError(t, err)
		if i == 5 {
			require.Nil(t, got)
			continue
		}
		require.True(t, got.LastHeartbeatAt.Valid)
		require.True(t, at.Equal(got.LastHeartbeatAt.Time), "site %d: %v", i, got.LastHeartbeatAt.Time)
		require.True(t, at.Equal(got.UpdatedAt))
		require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), got.ProcessMetrics.String)
		require.False(t, got.TaskSlots.Valid, "a nil task_slots keeps the stored one")

		// The same as the site's own heartbeat writes.
		one := *got
		require.NoError(t, s.Sessions().HeartbeatWorker(e.ctx, "default", one.WorkerID, at, sql.NullString{}, beats[i].ProcessMetrics))
		again, err := s.Sessions().GetWorker(e.ctx, "default", one.WorkerID)
		require.NoError(t, err)
		require.Equal(t, one, *again)
	}
}

// TestSchedulesDueAcross: one statement tells which sites have a due
// schedule row, each at its own now, as DueScheduleIDs would.
func TestSchedulesDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	now := e.clk.Now().UTC().Truncate(time.Second)
	var looks []ScheduleLook
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_"} {
		s := migratedStore(t, e, e.db, p)
		looks = append(looks, ScheduleLook{SiteTables: SiteTables{Store: s}, Now: now})
	}
	add := func(s *Store, handler string, next time.Time, enabled int) {
		_, err := e.db.ExecContext(e.ctx, render("INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run, enabled) "+
			"VALUES (?, '[]', 'default', '1 hour', 'interval', ?, ?)", s.tables), handler, DateTime(next), enabled)
		require.NoError(t, err)
	}
	add(looks[1].Store, "due", now.Add(-time.Minute), 1)
	add(looks[2].Store, "later", now.Add(time.Hour), 1)
	add(looks[3].Store, "off", now.Add(-time.Minute), 0)
	due, err := SchedulesDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)
	for i, l := range looks {
		ids, err := l.Store.DueScheduleIDs(e.ctx, l.Now, 0, 1)
		require.NoError(t, err)
		require.Equal(t, len(ids) > 0, due[i], "site %d agrees with its own tick", i)
	}
	looks[2].Now = now.Add(2 * time.Hour) // that site's clock is later
	due, err = SchedulesDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true, false}, due)
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

// TestOpenJobsAcross: one statement counts the open jobs of many prefixes,
// each site's counts exactly as its own metrics read gives them (completed
// jobs left out), also with the tables named with their database; a
// missing table fails the statement.
func TestOpenJobsAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // wp_
	var sites []SiteTables
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		s := migratedStore(t, e, e.db, p)
		sites = append(sites, SiteTables{Store: s})
	}
	insert := func(s *Store, queue, status string, n int) {
		for range n {
			_, err := e.db.ExecContext(e.ctx, render("INSERT INTO {jobs} (queue, handler, payload, status, available_at, created_at) VALUES (?, 'h', '{}', ?, NOW(), NOW())", s.tables), queue, status)
			require.NoError(t, err)
		}
	}
	insert(sites[0].Store, "default", "pending", 3)
	insert(sites[0].Store, "mail", "buried", 1)
	insert(sites[0].Store, "default", "completed", 4)
	insert(sites[2].Store, "default", "processing", 2)
	insert(sites[2].Store, "default", "failed", 1)

	jobs, err := OpenJobsAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	for i, s := range sites {
		one, err := s.Store.MetricsSnapshot(e.ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, one.Jobs, jobs[i], "site %d agrees with its own read", i)
	}
	require.ElementsMatch(t, []MetricsJobCount{{Queue: "default", Status: "pending", N: 3}, {Queue: "mail", Status: "buried", N: 1}}, jobs[0])
	require.Empty(t, jobs[1])

	var database string
	require.NoError(t, e.db.GetContext(e.ctx, &database, "SELECT DATABASE()"))
	for i := range sites {
		sites[i].Database = database
	}
	named, err := OpenJobsAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Equal(t, jobs, named)

	_, err = e.db.ExecContext(e.ctx, render("DROP TABLE {jobs}", sites[1].Store.tables))
	require.NoError(t, err)
	_, err = OpenJobsAcross(e.ctx, e.db, sites)
	require.ErrorContains(t, err, "open-jobs-site (3 sites)")
}

// ServerName names a server without its password.
func TestServerName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "shop@tcp-db:3306", ServerName("shop:secret@tcp(tcp-db:3306)/shop"))
	require.Equal(t, "root@unix(/run/mysqld/mysqld.sock)", ServerName("root@unix(/run/mysqld/mysqld.sock)/wp"))
	require.Equal(t, "127.0.0.1:3306", ServerName("tcp(127.0.0.1:3306)/wp"))
	require.Equal(t, "", ServerName("not a dsn"))
}

// lookSites migrates the tables of four prefixes in e's database and
// names each with the database, as a look on a connection to another
// database of the server does.
func lookSites(t *testing.T, e *testEnv) []SiteTables {
	t.Helper()
	var database string
	require.NoError(t, e.db.GetContext(e.ctx, &database, "SELECT DATABASE()"))
	var sites []SiteTables
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_"} {
		s := migratedStore(t, e, e.db, p)
		sites = append(sites, SiteTables{Store: s, Database: database})
	}
	return sites
}

// migratedStore is a Store of prefix's tables on db, migrated.
func migratedStore(t *testing.T, e *testEnv, db *sqlx.DB, prefix string) *Store {
	t.Helper()
	s, err := New(db, mustResolve(t, Naming{DBPrefix: prefix}), e.clk)
	require.NoError(t, err)
	_, err = s.Migrate(e.ctx)
	require.NoError(t, err)
	return s
}

// execIn runs q with s's {suffix} tables.
func execIn(t *testing.T, e *testEnv, s *Store, q string, args ...any) int64 {
	t.Helper()
	res, err := e.db.ExecContext(e.ctx, render(q, s.tables), args...)
	require.NoError(t, err, q)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	return id
}

// TestStaleAcross: one statement tells which sites have a row their stale
// sweep would take, each at its own cutoff, step rows only for the sites
// that sweep them; each site's sweep then agrees.
func TestStaleAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sites := lookSites(t, e)
	now := e.clk.Now().UTC()
	job := func(s *Store, reserved time.Time, workflow any) {
		execIn(t, e, s, "INSERT INTO {jobs} (handler, payload, status, reserved_at, workflow_id, attempts) VALUES ('h', '{}', 'processing', ?, ?, 1)",
			DateTime(reserved), workflow)
	}
	job(sites[1].Store, now.Add(-time.Hour), nil)      // stale at 10 min
	job(sites[2].Store, now.Add(-2*time.Minute), nil)  // stale only at a shorter timeout
	job(sites[3].Store, now.Add(-time.Hour), int64(7)) // a stale workflow step
	job(sites[0].Store, now.Add(-10*time.Second), nil) // recently heard from
	looks := make([]StaleLook, len(sites))
	for i, s := range sites {
		looks[i] = StaleLook{SiteTables: s, Cutoff: now.Add(-10 * time.Minute)}
	}
	due, err := StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)

	looks[2].Cutoff = now.Add(-time.Minute) // that site's stale timeout is one minute
	looks[3].Steps = true                   // that site sweeps workflow steps
	due, err = StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true, true}, due)
	retry := func(*JobRow) StaleStepDecision { return StaleStepDecision{Delay: time.Minute} }
	for i, l := range looks {
		n, _, err := l.Store.RecoverStaleRows(e.ctx, l.Cutoff, 10, func(*JobRow) StaleDecision { return StaleDecision{Delay: time.Minute} })
		require.NoError(t, err)
		if l.Steps {
			m, _, err := l.Store.RecoverStaleWorkflowSteps(e.ctx, l.Cutoff, 10, retry)
			require.NoError(t, err)
			n += m
		}
		require.Equal(t, due[i], n > 0, "site %d's sweep agrees with the look", i)
	}
	due, err = StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false}, due, "swept")

	// A for_each cursor whose workflow is gone: the sweep of a site that
	// sweeps workflow steps drops it.
	execIn(t, e, sites[0].Store, "INSERT INTO {for_each_plans} (job_id, workflow_id, step_index, next_item, total_items, updated_at) VALUES (1, 999, 0, 5, 10, NOW())")
	due, err = StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false}, due, "a site without workflows leaves cursors alone")
	looks[0].Steps = true
	due, err = StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false, false}, due)
	n, err := sites[0].Store.DeleteOrphanForEachPlans(e.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	due, err = StaleAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false}, due, "dropped")
}

// TestRetentionDueAcross: one statement tells which sites have a row some
// kind of their retention policy would delete, each at its own cutoffs;
// a row another live row still needs is not one.
func TestRetentionDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sites := lookSites(t, e)
	now := e.clk.Now().UTC()
	day := 24 * time.Hour
	completed := func(s *Store, at time.Time) int64 {
		return execIn(t, e, s, "INSERT INTO {jobs} (handler, payload, status, completed_at) VALUES ('h', '{}', 'completed', ?)", DateTime(at))
	}
	completed(sites[1].Store, now.Add(-10*day))         // past 7 days
	completed(sites[2].Store, now.Add(-3*day))          // past 1 day only
	held := completed(sites[0].Store, now.Add(-10*day)) // a pending job depends on it
	execIn(t, e, sites[0].Store, "INSERT INTO {jobs} (handler, payload, depends_on) VALUES ('h', '{}', ?)", held)
	execIn(t, e, sites[3].Store, "INSERT INTO {logs} (handler, event, created_at) VALUES ('h', 'completed', ?)", DateTime(now.Add(-10*day)))
	looks := make([]RetentionLook, len(sites))
	for i, s := range sites {
		looks[i] = RetentionLook{SiteTables: s, Cutoffs: map[RetentionKind]time.Time{RetainCompleted: now.Add(-7 * day)}}
	}
	due, err := RetentionDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)

	looks[2].Cutoffs[RetainCompleted] = now.Add(-day) // that site keeps completed jobs a day
	looks[3].Cutoffs[RetainLogs] = now.Add(-7 * day)  // that site sweeps log rows too
	due, err = RetentionDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true, true}, due)
	for i, l := range looks {
		n := 0
		for k, cutoff := range l.Cutoffs {
			c, err := l.Store.CountRetention(e.ctx, k, cutoff)
			require.NoError(t, err)
			n += c
		}
		require.Equal(t, due[i], n > 0, "site %d's sweep agrees with the look", i)
	}

	looks[0].Cutoffs = map[RetentionKind]time.Time{RetainWorkflows: now} // a kind the look leaves to the site
	looks[1].Cutoffs = map[RetentionKind]time.Time{}                     // nothing swept
	due, err = RetentionDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, true}, due)
}

// workflowIn inserts a workflow row of status into s.
func workflowIn(t *testing.T, e *testEnv, s *Store, status string, extra string, args ...any) int64 {
	t.Helper()
	cols, vals := "name, status, state, total_steps", "'w', ?, '{}', 2"
	if extra != "" {
		c, v, _ := strings.Cut(extra, "=")
		cols, vals = cols+", "+c, vals+", "+v
	}
	return execIn(t, e, s, "INSERT INTO {workflows} ("+cols+") VALUES ("+vals+")", append([]any{status}, args...)...)
}

// TestSignalsDueAcross: one statement tells which sites have a workflow
// waiting for a signal with a signal row after the site's own watermark,
// as their poll would find.
func TestSignalsDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sites := lookSites(t, e)
	signal := func(s *Store, workflow int64) int64 {
		return execIn(t, e, s, "INSERT INTO {signals} (workflow_id, signal_name, payload) VALUES (?, 'go', '{}')", workflow)
	}
	signal(sites[1].Store, workflowIn(t, e, sites[1].Store, "waiting_for_signal", ""))
	signal(sites[2].Store, workflowIn(t, e, sites[2].Store, "running", "")) // not waiting
	waiting := workflowIn(t, e, sites[3].Store, "waiting_for_signal", "")
	seen := signal(sites[3].Store, waiting)
	looks := make([]SignalLook, len(sites))
	for i, s := range sites {
		looks[i] = SignalLook{SiteTables: s}
	}
	looks[3].After = seen // that site's poller read past it
	due, err := SignalsDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)
	signal(sites[3].Store, waiting)
	due, err = SignalsDueAcross(e.ctx, e.db, looks)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, true}, due)
	for i, l := range looks {
		upto, err := l.Store.MaxSignalID(e.ctx)
		require.NoError(t, err)
		ids, err := l.Store.SignalWaiters(e.ctx, l.After, upto)
		require.NoError(t, err)
		require.Equal(t, due[i], len(ids) > 0, "site %d's poll agrees with the look", i)
	}
}

// TestWaitsDueAcross: one statement tells which sites have a wait the wait
// sweep would look at: a workflow waiting for workflows, or a finished
// run_workflow child whose parent still waits at its step.
func TestWaitsDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sites := lookSites(t, e)
	workflowIn(t, e, sites[1].Store, "waiting_for_workflows", "")
	parent := workflowIn(t, e, sites[2].Store, "running", "current_step=1")
	workflowIn(t, e, sites[2].Store, "completed", "parent_workflow_id, parent_step_index=?, 1", parent)
	workflowIn(t, e, sites[3].Store, "completed", "")
	due, err := WaitsDueAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true, false}, due)
	for i, s := range sites {
		waiters, err := s.Store.WaitingForWorkflows(e.ctx, 0, 10)
		require.NoError(t, err)
		children, err := s.Store.StuckRunWorkflowChildren(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, due[i], len(waiters)+len(children) > 0, "site %d's sweep agrees with the look", i)
	}
}

// TestDeadlinesDueAcross: one statement tells which sites have a running
// workflow past its deadline.
func TestDeadlinesDueAcross(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sites := lookSites(t, e)
	workflowIn(t, e, sites[1].Store, "running", "deadline_at=NOW() - INTERVAL 1 MINUTE")
	workflowIn(t, e, sites[2].Store, "running", "deadline_at=NOW() + INTERVAL 1 HOUR")
	workflowIn(t, e, sites[3].Store, "waiting_for_signal", "deadline_at=NOW() - INTERVAL 1 MINUTE") // a waiting workflow never hits it
	due, err := DeadlinesDueAcross(e.ctx, e.db, sites)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, false}, due)
	for i, s := range sites {
		ids, err := s.Store.OverdueWorkflows(e.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, due[i], len(ids) > 0, "site %d's check agrees with the look", i)
	}
}

// TestWriteCounters: the idle look's gate reads the server's write
// counters. An idle daemon's own reads — the batched look (prepared and
// not), the batched reads of the per-site loops (webhooks, schedules,
// stale sweep, retention, signals, waits, deadlines) and of the open jobs, the
// counters read itself — leave them still, so a gate on an idle server stays shut; an INSERT, an UPDATE
// that changes a row, a DELETE and a COMMIT each move them. Counted on one
// connection's session counters (the global ones are the sum of every
// session's, and other tests write on this server), then the global
// reading is checked to change with them.
func TestWriteCounters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)                         // wp_
	one, err := Open(e.ctx, e.dsn, 1, nil) // every statement on the same session
	require.NoError(t, err)
	t.Cleanup(func() { _ = one.Close() })
	st, err := New(one, e.tables, e.clk)
	require.NoError(t, err)
	session := func() map[string]string {
		rows, err := one.QueryContext(e.ctx, "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_write', 'Handler_update', 'Handler_delete', 'Com_commit', 'Com_xa_commit')")
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var n, v string
			require.NoError(t, rows.Scan(&n, &v))
			out[n] = v
		}
		require.NoError(t, rows.Err())
		require.Len(t, out, 5)
		return out
	}

	reading, err := ReadWriteCounters(e.ctx, one)
	require.NoError(t, err)
	for _, n := range writeCountersNeeded {
		if n != "Handler_update" {
			require.Contains(t, reading.Others, n+"=")
		}
	}

	before := session()
	looks := []DueLook{{Store: st, Queues: []string{"default", "low"}}}
	looker := NewDueLooker(one)
	defer looker.Close()
	for range 3 {
		_, err := looker.AnyDue(e.ctx, looks)
		require.NoError(t, err)
		_, err = AnyDueAcross(e.ctx, one, looks)
		require.NoError(t, err)
		_, err = WebhooksAcross(e.ctx, one, []SiteTables{{Store: st}})
		require.NoError(t, err)
		_, err = SchedulesDueAcross(e.ctx, one, []ScheduleLook{{SiteTables: SiteTables{Store: st}, Now: e.clk.Now()}})
		require.NoError(t, err)
		_, err = StaleAcross(e.ctx, one, []StaleLook{{SiteTables: SiteTables{Store: st}, Cutoff: e.clk.Now(), Steps: true}})
		require.NoError(t, err)
		_, err = SignalsDueAcross(e.ctx, one, []SignalLook{{SiteTables: SiteTables{Store: st}}})
		require.NoError(t, err)
		_, err = WaitsDueAcross(e.ctx, one, []SiteTables{{Store: st}})
		require.NoError(t, err)
		_, err = DeadlinesDueAcross(e.ctx, one, []SiteTables{{Store: st}})
		require.NoError(t, err)
		_, err = OpenJobsAcross(e.ctx, one, []SiteTables{{Store: st}})
		require.NoError(t, err)
		cutoffs := map[RetentionKind]time.Time{}
		for _, k := range RetentionKinds {
			cutoffs[k] = e.clk.Now()
		}
		_, err = RetentionDueAcross(e.ctx, one, []RetentionLook{{SiteTables: SiteTables{Store: st}, Cutoffs: cutoffs}})
		require.NoError(t, err)
		_, err = ReadWriteCounters(e.ctx, one)
		require.NoError(t, err)
	}
	require.Equal(t, before, session(), "an idle daemon's reads moved the write counters")

	jobs := "`" + e.tables["jobs"] + "`"
	writes := []struct {
		what, counter string
		stmt          func() error
	}{
		{"an INSERT", "Handler_write", func() error {
			_, err := one.ExecContext(e.ctx, "INSERT INTO "+jobs+" (queue, handler, payload, status, available_at, created_at) VALUES ('default', 'h', '{}', 'pending', NOW(), NOW())")
			return err
		}},
		{"an UPDATE", "Handler_update", func() error {
			_, err := one.ExecContext(e.ctx, "UPDATE "+jobs+" SET priority = priority + 1")
			return err
		}},
		{"a DELETE", "Handler_delete", func() error {
			_, err := one.ExecContext(e.ctx, "DELETE FROM "+jobs)
			return err
		}},
		{"a COMMIT", "Com_commit", func() error {
			tx, err := one.BeginTx(e.ctx, nil)
			if err != nil {
				return err
			}
			return tx.Commit()
		}},
	}
	// The batched heartbeat's UPDATE moves Handler_update by the rows it
	// reports changed, and nothing else: Sites' gate takes them off.
	at := e.clk.Now().UTC().Truncate(time.Second)
	require.NoError(t, st.Sessions().UpsertWorker(e.ctx, WorkerRow{Namespace: "default", WorkerID: "w", TaskQueue: "q",
		Queues: StringList{"q"}, Runtime: "go", RegisteredAt: at.Add(-time.Hour), UpdatedAt: at.Add(-time.Hour)}))
	beats := []WorkerBeat{{SiteTables: SiteTables{Store: st}, Namespace: "default", WorkerID: "w", At: at},
		{SiteTables: SiteTables{Store: st}, Namespace: "default", WorkerID: "gone", At: at}}
	s0 := session()
	_, changed, err := HeartbeatWorkersAcross(e.ctx, one, beats)
	require.NoError(t, err)
	require.EqualValues(t, 1, changed)
	s1 := session()
	u0, err := strconv.ParseInt(s0["Handler_update"], 10, 64)
	require.NoError(t, err)
	u1, err := strconv.ParseInt(s1["Handler_update"], 10, 64)
	require.NoError(t, err)
	require.Equal(t, changed, u1-u0, "Handler_update moved by the rows reported")
	s0["Handler_update"], s1["Handler_update"] = "", ""
	require.Equal(t, s0, s1, "the heartbeat moved a counter besides Handler_update")

	for _, w := range writes {
		s0 := session()
		r0, err := ReadWriteCounters(e.ctx, one)
		require.NoError(t, err)
		require.NoError(t, w.stmt(), w.what)
		s1 := session()
		require.NotEqual(t, s0[w.counter], s1[w.counter], "%s did not move %s", w.what, w.counter)
		r1, err := ReadWriteCounters(e.ctx, one)
		require.NoError(t, err)
		require.NotEqual(t, r0, r1, "%s did not change the server's reading", w.what)
	}
}
