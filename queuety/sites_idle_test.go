package queuety

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestSitesIdleStatements: idle sites send no statement of their own; the
// sites of a server are looked at, heartbeated and have their webhooks
// read and their schedules looked at together, a statement for all of
// them each time. The work each batched statement stands for is still
// done on every site: its registration is refreshed (and written again
// when an operator removed it), a webhook registered while it runs is
// read, a due schedule is ticked, a dispatched job runs.
// Counted statements, not timed: a slow machine sends fewer of each.
func TestSitesIdleStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sites []Site
	clients := map[string]*Client{}
	for d, dsn := range []string{testdb.New(t), testdb.New(t)} {
		for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
			name := fmt.Sprintf("db%d/%s", d, p)
			clients[name] = siteClient(t, dsn, p)
			sites = append(sites, Site{Name: name, Config: Config{DSN: dsn, TablePrefix: p, RescueSchedule: "off",
				RegistrationHeartbeat: time.Second, Webhooks: WebhookConfig{Refresh: time.Second}, ScheduleInterval: time.Second,
				ShutdownGrace: time.Second, Logger: testLogger()}})
		}
	}
	runs := &siteRuns{runs: map[string]int{}}
	reg := runs.registry()
	counter := &statementCounter{}
	s, err := NewSites(SitesConfig{
		Discover:     func(context.Context) ([]Site, error) { return sites, nil },
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 50 * time.Millisecond, Logger: testLogger(),
	})
	require.NoError(t, err)
	s.open = counter.open
	goRunStarted(t, ctx, s)
	time.Sleep(1500 * time.Millisecond) // past every site's start

	batched, report := counter.idleFor(t, 3*time.Second)
	// Every poll reads the server's write counters; the look runs when
	// they moved (other tests write on this server) and at least every
	// IdleLookInterval (1 s).
	require.GreaterOrEqual(t, batched["counters"], 10, report)
	require.GreaterOrEqual(t, batched["look"], 1, report)
	require.GreaterOrEqual(t, batched["heartbeat"], 1, report)
	require.GreaterOrEqual(t, batched["registered"], 1, report)
	require.GreaterOrEqual(t, batched["webhooks"], 1, report)
	require.GreaterOrEqual(t, batched["schedules"], 1, report)
	// The rows the batched heartbeat changed are counted as the daemon's
	// own, which the look's gate takes off the server's counters.
	s.mu.Lock()
	for _, l := range s.servers {
		require.GreaterOrEqual(t, l.own.rows.Load(), int64(len(sites)), report)
	}
	s.mu.Unlock()
	// One server: each is one statement for all six sites at once.
	require.LessOrEqual(t, batched["heartbeat"], 4, report)
	require.LessOrEqual(t, batched["webhooks"], 4, report)
	require.LessOrEqual(t, batched["schedules"], 4, report)

	workers := map[string]*Worker{}
	for name := range clients {
		s.mu.Lock()
		r := s.sites[name]
		s.mu.Unlock()
		r.mu.Lock()
		workers[name] = r.worker
		r.mu.Unlock()
		require.NotNil(t, workers[name], name)
	}
	beatOf := func(name string) time.Time {
		c, w := clients[name], workers[name]
		row, err := c.sessions.Worker(ctx, w.cfg.Namespace, w.id)
		require.NoError(t, err, name)
		require.NotNil(t, row.LastHeartbeatAt, name)
		return *row.LastHeartbeatAt
	}
	before := map[string]time.Time{}
	for name := range clients {
		before[name] = beatOf(name)
		_, err := clients[name].store.AddWebhook(ctx, WebhookJobFailed, "http://127.0.0.1:9/"+name)
		require.NoError(t, err)
		dispatchToSite(t, clients[name], name, 1)
		c := clients[name]
		id, err := c.AddSchedule(ctx, NewSchedule{Handler: "count", Payload: map[string]any{"site": name}, Every: "1 hour"})
		require.NoError(t, err)
		_, err = c.store.DB().ExecContext(ctx, "UPDATE `"+c.store.Tables()["schedules"]+"` SET next_run = ? WHERE id = ?",
			c.store.Now().Add(-time.Minute), id)
		require.NoError(t, err)
	}
	gone := sites[4].Name // an operator deregisters one site's worker
	require.NoError(t, clients[gone].sessions.Deregister(ctx, workers[gone].cfg.Namespace, workers[gone].id))

	waitFor(t, time.Minute, "every site's job and scheduled job", func() bool { n, _ := runs.count(); return n == 2*len(sites) })
	for name, w := range workers {
		waitFor(t, time.Minute, name+"'s new webhook read", func() bool { return w.hooks.Wants(WebhookJobFailed) })
		waitFor(t, time.Minute, name+"'s registration refreshed", func() bool {
			row, err := clients[name].sessions.Worker(ctx, w.cfg.Namespace, w.id)
			return err == nil && row.LastHeartbeatAt != nil && row.LastHeartbeatAt.After(before[name])
		})
	}
	_, twice := runs.count()
	require.Empty(t, twice)
}

// statementCounter opens the pools of a Sites (as store.Open does) through
// connections that count what they send while on: the statements that
// name several sites' tables by what they do, the others by their text.
type statementCounter struct {
	mu      sync.Mutex
	on      bool
	batched map[string]int
	own     map[string]int
	ownText []string // the own statements in full
}

func (c *statementCounter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.batched, c.own, c.ownText = true, map[string]int{}, map[string]int{}, nil
}

// sent counts the own statements sent while on that name a table of
// prefix (its backquoted name begins "`<prefix>queuety_").
func (c *statementCounter) sent(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, q := range c.ownText {
		if strings.Contains(q, "`"+prefix+"queuety_") {
			n++
		}
	}
	return n
}

func (c *statementCounter) stop() (batched, own map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.batched, c.own
}

// stopReport stops counting and logs what was counted, returning it and
// the report the test's messages carry.
func (c *statementCounter) stopReport(t *testing.T) (batched, own map[string]int, report string) {
	t.Helper()
	batched, own = c.stop()
	report = fmt.Sprintf("batched %v; the sites' own %v", batched, own)
	t.Log(report)
	return batched, own, report
}

// idleFor counts the statements sent over d and checks no site sent one
// of its own: every statement of idle sites is a batched one.
func (c *statementCounter) idleFor(t *testing.T, d time.Duration) (batched map[string]int, report string) {
	t.Helper()
	c.start()
	time.Sleep(d)
	batched, own, report := c.stopReport(t)
	require.Empty(t, own, "statements of one site alone while idle: %s", report)
	return batched, report
}

// counted is how many statements of kind were counted since start.
func (c *statementCounter) counted(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batched[kind]
}

// statementKinds name the batched statements by how they begin and a
// part only theirs; the first that matches names one, so the order counts.
var statementKinds = []struct{ prefix, contains, kind string }{
	{"UPDATE (SELECT 1 AS one)", "", "heartbeat"},
	{"(SELECT", "idx_qgo_claim", "look"},
	{"(SELECT", "worker_id", "registered"},
	{"(SELECT", "event, url", "webhooks"},
	{"(SELECT", "next_run", "schedules"},
	{"(SELECT", "status = 'processing'", "stale"},
	{"(SELECT", "waiting_for_signal", "signals"},
	{"(SELECT ? AS site FROM DUAL WHERE EXISTS", "deadline_at", "deadlines"},
	{"(SELECT ? AS site FROM DUAL WHERE EXISTS", "waiting_for_workflows", "waits"},
	{"(SELECT ? AS site FROM DUAL WHERE EXISTS", "_at < ?", "retention"},
	{"SHOW GLOBAL STATUS", "Handler_write", "counters"},
}

func (c *statementCounter) count(query string) {
	q := strings.Join(strings.Fields(query), " ")
	kind := ""
	for _, k := range statementKinds {
		if strings.HasPrefix(q, k.prefix) && strings.Contains(q, k.contains) {
			kind = k.kind
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	if kind != "" {
		c.batched[kind]++
		return
	}
	c.own[q[:min(len(q), 80)]]++
	c.ownText = append(c.ownText, q)
}

// open is store.Open's pool with the counting connector.
func (c *statementCounter) open(ctx context.Context, dsn string, maxConns int, _ *slog.Logger) (*sqlx.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime, cfg.Loc, cfg.InterpolateParams = true, time.UTC, true
	// store.Open's session isolation, under either of its names.
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		cfg.Params = map[string]string{"time_zone": "'+00:00'", name: "'READ-COMMITTED'"}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		db := sqlx.NewDb(sql.OpenDB(&countingConnector{Connector: conn, c: c}), "mysql")
		db.SetMaxOpenConns(maxConns)
		db.SetMaxIdleConns(maxConns)
		err = db.PingContext(ctx)
		if err == nil {
			return db, nil
		}
		_ = db.Close()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1193 { // unknown system variable
			return nil, err
		}
	}
	return nil, errors.New("no isolation variable")
}

type countingConnector struct {
	driver.Connector
	c *statementCounter
}

func (cc *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: cc.c}, nil
}

// countingConn passes everything to the driver's connection, which
// implements each optional interface below.
type countingConn struct {
	driver.Conn
	c *statementCounter
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.c.count("BEGIN")
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.c.count(query)
	}
	return res, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.c.count(query)
	}
	return rows, err
}

// PrepareContext counts each run of the statement, not its preparing.
func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: st, query: query, c: c.c}, nil
}

// countingStmt passes everything to the driver's statement, which
// implements each optional interface below.
type countingStmt struct {
	driver.Stmt
	query string
	c     *statementCounter
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.count(s.query)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.count(s.query)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.Stmt.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *countingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}
