package queuety

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/workflow"
)

// loopsConfig is a site's Config with every per-site loop on and ticking
// each second: the stale sweep, retention (completed jobs and log rows
// older than a day), workflows with their deadline check, wait sweep and
// signal poll, the scheduler, the registration heartbeat, the webhooks.
func loopsConfig(dsn, prefix string) Config {
	return Config{DSN: dsn, TablePrefix: prefix, Workflows: true,
		RescueSchedule: "@every 1s", StaleTimeout: 10 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
		RetentionSchedule: "@every 1s", RetentionDays: 1, LogRetentionDays: 1,
		DeadlineInterval: time.Second, WaitSweepInterval: time.Second, SignalPollInterval: time.Second,
		ScheduleInterval: time.Second, RegistrationHeartbeat: time.Second, Webhooks: WebhookConfig{Refresh: time.Second},
		ShutdownGrace: time.Second, Logger: testLogger()}
}

// migrateSite creates the Queuety tables of prefix in dsn's database, as
// activating the plugin on a subsite does, and closes its connections.
func migrateSite(t *testing.T, dsn, prefix string) {
	t.Helper()
	c, err := Open(context.Background(), Config{DSN: dsn, TablePrefix: prefix, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Migrate(context.Background())
	require.NoError(t, err)
}

// TestSitesLoopsBatched: the stale sweep, retention, the deadline check,
// the wait sweep and the signal poll of many sites are each one look for
// the sites of a server, and a site's round runs only when its look found
// something: a stale row is rescued, an old row deleted, a signal, a lost
// wake-up and a deadline handled, each on its own site, while an idle site
// sends nothing of its own. A database whose tables are gone fails its
// own sites' looks only; its rows are handled once it is back.
func TestSitesLoopsBatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsnA, dsnB := testdb.New(t), testdb.New(t)
	names := []string{"stale", "old", "signal", "wait", "late", "idle"}
	prefix := map[string]string{}
	clients := map[string]*Client{}
	var sites []Site
	for i, name := range names {
		prefix[name] = fmt.Sprintf("wp_%d_", i+2)
		clients[name] = siteClient(t, dsnA, prefix[name])
		sites = append(sites, Site{Name: name, Config: loopsConfig(dsnA, prefix[name])})
	}
	clients["b"] = siteClient(t, dsnB, "wp_")
	sites = append(sites, Site{Name: "b", Config: loopsConfig(dsnB, "wp_")})

	// Workflows parked before the start: one waits for a signal, one for
	// a workflow whose PHP step no Go worker runs, one for a step no
	// handler takes, with a deadline.
	signalled := dispatchWF(t, clients["signal"], workflow.New("w").WaitForSignal("approval").Then("IncStep"), wfObj(t, "n", 0))
	dep := dispatchWF(t, clients["wait"], workflow.New("php_dep").Then("SomePhpStep"), wfObj(t))
	waiter := dispatchWF(t, clients["wait"], workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(dep), workflow.ResultKey("dep")), wfObj(t))
	late := dispatchWF(t, clients["late"], workflow.New("late").Then("Unknown").MustCompleteWithin(time.Hour), wfObj(t))

	reg := workflowRegistry(t)
	counter := &statementCounter{}
	s, err := NewSites(SitesConfig{
		Discover:     func(context.Context) ([]Site, error) { return sites, nil },
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 50 * time.Millisecond, Retry: 100 * time.Millisecond, Logger: testLogger(),
	})
	require.NoError(t, err)
	s.open = counter.open
	goRunStarted(t, ctx, s)
	waitStatus(t, clients["signal"], signalled, "waiting_for_signal")
	waitStatus(t, clients["wait"], waiter, "waiting_for_workflows")
	time.Sleep(1500 * time.Millisecond) // past every loop's first round, which each runs at start

	// Database B's jobs table goes (a DROP by mistake, a restore under
	// way): every look that reads it fails there. Its stale and old rows
	// wait in the table put aside.
	adminB, err := sqlx.Open("mysql", dsnB)
	require.NoError(t, err)
	t.Cleanup(func() { _ = adminB.Close() })
	_, err = adminB.Exec("RENAME TABLE wp_queuety_jobs TO wp_queuety_jobs_gone")
	require.NoError(t, err)
	waitFor(t, time.Minute, "site b reported", func() bool { return siteState(s, "b") == SiteUnreachable })

	counter.start()
	// Rows that only a loop's round handles, each on its own site.
	staleRow := func(c *Client, table string) {
		_, err := c.store.DB().ExecContext(ctx, "INSERT INTO `"+table+"` (handler, payload, status, attempts, max_attempts, reserved_at) "+
			"VALUES ('count', '{}', 'processing', 3, 3, NOW() - INTERVAL 1 HOUR)")
		require.NoError(t, err)
	}
	oldRow := func(c *Client, table string) {
		_, err := c.store.DB().ExecContext(ctx, "INSERT INTO `"+table+"` (handler, payload, status, completed_at) "+
			"VALUES ('count', '{}', 'completed', NOW() - INTERVAL 10 DAY)")
		require.NoError(t, err)
	}
	staleRow(clients["stale"], clients["stale"].store.Tables()["jobs"])
	oldRow(clients["old"], clients["old"].store.Tables()["jobs"])
	staleRow(clients["b"], "wp_queuety_jobs_gone")
	oldRow(clients["b"], "wp_queuety_jobs_gone")
	_, err = clients["signal"].store.DB().ExecContext(ctx, "INSERT INTO `"+clients["signal"].store.Tables()["signals"]+
		"` (workflow_id, signal_name, payload) VALUES (?, 'approval', '{\"by\":\"sql\"}')", signalled)
	require.NoError(t, err)
	_, err = clients["wait"].store.DB().ExecContext(ctx, "UPDATE `"+clients["wait"].store.Tables()["workflows"]+
		"` SET status = 'completed', state = '{\"by\":\"php\"}' WHERE id = ?", dep)
	require.NoError(t, err)
	_, err = clients["late"].store.DB().ExecContext(ctx, "UPDATE `"+clients["late"].store.Tables()["workflows"]+
		"` SET deadline_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", late)
	require.NoError(t, err)

	waitFor(t, time.Minute, "the stale row rescued (buried: no attempt left)", func() bool { return countStatus(t, clients["stale"], "buried") == 1 })
	waitFor(t, time.Minute, "the old row deleted", func() bool { return countStatus(t, clients["old"], "completed") == 0 })
	waitStatus(t, clients["signal"], signalled, "completed")
	waitStatus(t, clients["wait"], waiter, "completed")
	waitStatus(t, clients["late"], late, "failed")
	require.Equal(t, "Deadline exceeded", workflowRow(t, clients["late"], late).ErrorMessage.String)
	time.Sleep(2 * time.Second) // two more rounds of every loop
	batched, _, report := counter.stopReport(t)
	require.Zero(t, counter.sent(prefix["idle"]), "the idle site's own statements: %s", report)
	for _, kind := range []string{"stale", "retention", "signals", "waits", "deadlines"} {
		require.GreaterOrEqual(t, batched[kind], 1, kind+": "+report)
	}
	require.Equal(t, 0, countStatus(t, clients["stale"], "processing"))

	// Database B is back: its own rows are handled at its sites' next
	// rounds.
	var stuck int
	require.NoError(t, adminB.Get(&stuck, "SELECT COUNT(*) FROM wp_queuety_jobs_gone WHERE status IN ('processing', 'completed')"))
	require.Equal(t, 2, stuck, "nothing reached b's rows while its table was gone")
	_, err = adminB.Exec("RENAME TABLE wp_queuety_jobs_gone TO wp_queuety_jobs")
	require.NoError(t, err)
	waitFor(t, time.Minute, "b's stale row rescued", func() bool { return countStatus(t, clients["b"], "buried") == 1 })
	waitFor(t, time.Minute, "b's old row deleted", func() bool { return countStatus(t, clients["b"], "completed") == 0 })
	waitFor(t, time.Minute, "site b reported running", func() bool { return siteState(s, "b") == SiteRunning })
}

// TestSitesIdleStatementsAllLoops: 50 idle sites with every per-site loop
// on (the stale sweep, retention, workflows' deadline check, wait sweep
// and signal poll, the scheduler, the heartbeat, the webhooks) send no
// statement of their own; each loop is one statement for all of them a
// round. The counts per kind are logged: at one second a round here, they
// give each loop's share at its real interval.
func TestSitesIdleStatementsAllLoops(t *testing.T) {
	t.Parallel()
	const databases, perDatabase = 5, 10
	var sites []Site
	var mu sync.Mutex
	var wg sync.WaitGroup
	for d := range databases {
		dsn := testdb.New(t)
		wg.Add(1)
		go func() { // a database's tables at a time, the databases at once
			defer wg.Done()
			for p := range perDatabase {
				prefix := fmt.Sprintf("wp_%d_", p+2)
				migrateSite(t, dsn, prefix)
				mu.Lock()
				sites = append(sites, Site{Name: fmt.Sprintf("db%d/%s", d, prefix), Config: loopsConfig(dsn, prefix)})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, sites, databases*perDatabase)
	counter := &statementCounter{}
	s, err := NewSites(SitesConfig{
		Discover:     func(context.Context) ([]Site, error) { return sites, nil },
		Registry:     func(Site) (*Registry, error) { return workflowRegistry(t), nil },
		LookInterval: 50 * time.Millisecond, Logger: testLogger(),
	})
	require.NoError(t, err)
	s.open = counter.open
	goRunStarted(t, context.Background(), s)
	time.Sleep(2 * time.Second) // past every site's start and its loops' first rounds

	batched, report := counter.idleFor(t, 5*time.Second)
	// One server: each loop is one statement for all 50 sites a round,
	// a round a second (a slow machine runs fewer); the heartbeat is one
	// UPDATE every 60 sites.
	for _, kind := range []string{"heartbeat", "registered", "webhooks", "schedules", "stale", "retention", "deadlines", "waits", "signals"} {
		require.GreaterOrEqual(t, batched[kind], 1, kind+": "+report)
		require.LessOrEqual(t, batched[kind], 7, kind+": "+report)
	}
}
