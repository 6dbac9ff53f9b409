package engine_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/steps"
	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// What one workflow step costs the database, counted at the driver: round
// trips (a statement, or a packet of several from a pipelined
// transaction, sql/pipeline.go; the store interpolates parameters, so a
// statement is never more than one), the statements themselves,
// transactions and commits (each writing commit is a redo log flush on a
// server with innodb_flush_log_at_trx_commit=1). A local activity exists
// for low latency, so a local step must cost no more than a chained step
// (chain.go), the cheapest ordinary step; counts are deterministic where
// timings are not.

// sqlCounts is what a countingConnector saw while on.
type sqlCounts struct {
	RoundTrips                             int
	Statements, Begins, Commits, Rollbacks int
	Rows                                   int64 // rows affected by writes
	Verbs                                  map[string]int
	Texts                                  []string
}

func (c sqlCounts) String() string {
	verbs := make([]string, 0, len(c.Verbs))
	for v, n := range c.Verbs {
		verbs = append(verbs, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(verbs)
	return fmt.Sprintf("%d round trips: %d statements (%s), %d begins, %d commits, %d rollbacks, %d rows written",
		c.RoundTrips, c.Statements, strings.Join(verbs, ", "), c.Begins, c.Commits, c.Rollbacks, c.Rows)
}

// countingConnector counts what its connections send while on.
type countingConnector struct {
	driver.Connector
	mu sync.Mutex
	on bool
	c  sqlCounts
	// into, when set, is the connector whose counts this one adds to.
	into *countingConnector
}

func (cc *countingConnector) start() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.on, cc.c = true, sqlCounts{Verbs: map[string]int{}}
}

func (cc *countingConnector) stop() sqlCounts {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.on = false
	return cc.c
}

func (cc *countingConnector) count(f func(c *sqlCounts)) {
	if cc.into != nil {
		cc = cc.into
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.on {
		f(&cc.c)
	}
}

func (cc *countingConnector) statement(query string, res driver.Result) {
	cc.count(func(c *sqlCounts) {
		c.RoundTrips++
		if mr, ok := res.(mysql.Result); ok {
			for _, n := range mr.AllRowsAffected() { // every statement of a packet
				c.Rows += n
			}
		} else if res != nil {
			if n, err := res.RowsAffected(); err == nil {
				c.Rows += n
			}
		}
		// A pipelined packet joins its statements with ";\n"; the texts
		// are the queries before interpolation, so no value splits them.
		for _, part := range strings.Split(query, ";\n") {
			q := strings.TrimSpace(part)
			verb, _, _ := strings.Cut(q, " ")
			switch strings.ToUpper(verb) {
			case "START":
				c.Begins++
				continue
			case "COMMIT":
				c.Commits++
				continue
			case "ROLLBACK":
				c.Rollbacks++
				continue
			}
			c.Statements++
			c.Verbs[strings.ToUpper(verb)]++
			if len(q) > 90 {
				q = q[:90]
			}
			c.Texts = append(c.Texts, strings.Join(strings.Fields(q), " "))
		}
	})
}

func (cc *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, cc: cc}, nil
}

// countingConn passes everything to the driver's connection (which
// implements every optional interface below) and counts.
type countingConn struct {
	driver.Conn
	cc *countingConnector
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.cc.count(func(s *sqlCounts) { s.Begins++; s.RoundTrips++ })
	return &countingTx{Tx: tx, cc: c.cc}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.cc.statement(query, res)
	}
	return res, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.cc.statement(query, nil)
	}
	return rows, err
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.cc.count(func(s *sqlCounts) { s.Verbs["PREPARE"]++ })
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

type countingTx struct {
	driver.Tx
	cc *countingConnector
}

func (t *countingTx) Commit() error {
	t.cc.count(func(s *sqlCounts) { s.Commits++; s.RoundTrips++ })
	return t.Tx.Commit()
}

func (t *countingTx) Rollback() error {
	t.cc.count(func(s *sqlCounts) { s.Rollbacks++; s.RoundTrips++ })
	return t.Tx.Rollback()
}

// newCountingEnv is an engine env (local runtime and chaining for
// "test-worker") whose store's connections are counted.
func newCountingEnv(t *testing.T) (*localEnv, *countingConnector) {
	t.Helper()
	ctx := context.Background()
	dsn, err := store.PrepareDSN(testdb.New(t))
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	var cc *countingConnector
	var db *sqlx.DB
	// READ COMMITTED per session, as store.Open sets it (the variable's
	// name depends on the server).
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		cfg.Params[name] = "'READ-COMMITTED'"
		conn, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		cc = &countingConnector{Connector: conn}
		db = sqlx.NewDb(sql.OpenDB(cc), "mysql")
		if err = db.PingContext(ctx); err == nil {
			break
		}
		_ = db.Close()
		delete(cfg.Params, name)
		db = nil
	}
	require.NotNil(t, db, "no connection with READ COMMITTED")
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { _ = db.Close() })
	// The pipeline's connections (store.OpenWithPipeline), counted alike.
	cfg.MultiStatements = true
	pconn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	pdb := sqlx.NewDb(sql.OpenDB(&countingConnector{Connector: pconn, into: cc}), "mysql")
	pdb.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = pdb.Close() })
	tables, err := store.Naming{DBPrefix: "wp_"}.Resolve()
	require.NoError(t, err)
	s, err := store.New(db, tables, nil)
	require.NoError(t, err)
	s.UsePipeline(pdb)
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	e := engine.NewEngine(engine.EngineConfig{Store: s, Handlers: enginetest.FixtureHandlers(t), Kinds: steps.All(), Host: costHost{},
		ChainSteps: 1000, LocalLease: time.Minute})
	env := &localEnv{engineEnv: &engineEnv{&enginetest.Env{T: t, DB: db, Store: s, Engine: e}}}
	env.step(t, "CostNoop", func(context.Context, *workflow.State) (*phpjson.Object, error) { return phpjson.NewObject(), nil })
	return env, cc
}

// stepCost runs one workflow of n steps of b from its first claim to its
// completion and returns what that cost.
func (env *localEnv) stepCost(cc *countingConnector, b *workflow.Builder) sqlCounts {
	t := env.T
	t.Helper()
	id := env.Dispatch(b, phpjson.NewObject())
	ids := env.PendingJobs()
	require.Len(t, ids, 1)
	cc.start()
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), ids[0], "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	stepErr, next, err := env.Engine.RunStep(env.Ctx(), job, enginetest.Decide)
	for err == nil && stepErr == nil && next != nil {
		stepErr, next, err = env.Engine.RunChained(env.Ctx(), next, enginetest.Decide)
	}
	counts := cc.stop()
	require.NoError(t, err)
	require.NoError(t, stepErr)
	require.Equal(t, "completed", env.Workflow(id).Status)
	return counts
}

// minus is c less d, field by field (the verbs and texts are dropped).
func (c sqlCounts) minus(d sqlCounts) sqlCounts {
	return sqlCounts{RoundTrips: c.RoundTrips - d.RoundTrips, Statements: c.Statements - d.Statements, Begins: c.Begins - d.Begins,
		Commits: c.Commits - d.Commits, Rollbacks: c.Rollbacks - d.Rollbacks, Rows: c.Rows - d.Rows}
}

// TestLocalStepCostsNoMoreThanChainedStep counts what a step adds to a
// workflow (a workflow of 12 steps less one of 2) when steps are chained
// and when they are local activities: a local step must send no more
// statements and commit no more often. The whole workflows' counts are
// logged too (go test -v lists every statement).
func TestLocalStepCostsNoMoreThanChainedStep(t *testing.T) {
	env, cc := newCountingEnv(t)
	workflows := func(steps int) (chained, local *workflow.Builder) {
		chained, local = workflow.New(fmt.Sprintf("cost-chained-%d", steps)), workflow.New(fmt.Sprintf("cost-local-%d", steps))
		for range steps {
			chained.Then("CostNoop")
			local.LocalActivity("CostNoop", workflow.LocalActivityOptions{})
		}
		return chained, local
	}
	ch2, lo2 := workflows(2)
	ch12, lo12 := workflows(12)
	// A first run of each warms the engine's caches (class metadata).
	env.stepCost(cc, ch2)
	env.stepCost(cc, lo2)
	chShort, loShort := env.stepCost(cc, ch2), env.stepCost(cc, lo2)
	chLong, loLong := env.stepCost(cc, ch12), env.stepCost(cc, lo12)
	chStep, loStep := chLong.minus(chShort), loLong.minus(loShort)
	t.Logf("chained, 12 steps: %s", chLong)
	t.Logf("local,   12 steps: %s", loLong)
	t.Logf("10 chained steps add %s", chStep)
	t.Logf("10 local steps add   %s", loStep)
	if testing.Verbose() {
		for _, c := range []struct {
			name string
			n    sqlCounts
		}{{"chained", chLong}, {"local", loLong}} {
			for i, q := range c.n.Texts {
				t.Logf("%s %3d %s", c.name, i, q)
			}
		}
	}
	require.LessOrEqual(t, loStep.RoundTrips, chStep.RoundTrips, "round trips of 10 local steps vs 10 chained ones")
	require.LessOrEqual(t, loStep.Statements, chStep.Statements, "statements of 10 local steps vs 10 chained ones")
	require.LessOrEqual(t, loStep.Begins, chStep.Begins, "transactions of 10 local steps vs 10 chained ones")
	require.LessOrEqual(t, loStep.Commits, chStep.Commits, "commits of 10 local steps vs 10 chained ones")
}

// costHost is a worker "test-worker" that chains every step and sets no
// time limit.
type costHost struct{}

func (costHost) Owner() string                                    { return "test-worker" }
func (costHost) Accepting() bool                                  { return true }
func (costHost) Chains(string, string) bool                       { return true }
func (costHost) StepTimeout(*store.JobRow) (time.Duration, error) { return 0, nil }
func (costHost) JobContext() context.Context                      { return context.Background() }
func (costHost) MemoryKB() int64                                  { return 0 }
