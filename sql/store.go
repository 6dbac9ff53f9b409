package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/clock"
)

// Store runs the named queries against one database and table naming.
type Store struct {
	db     *sqlx.DB
	unsafe *sqlx.DB // tolerates columns we do not map, for SELECT * reads
	tables Tables
	// database is the database every statement names its tables in, on a
	// pool shared by a server's databases (NewIn); "" names them alone,
	// in the connection's database.
	database string
	q        *queries
	clock    clock.Clock
	// pipe, when set, runs PipelinedWorkflowTx (pipeline.go); pipeSlots
	// bounds how many run at once to its connections.
	pipe      *sqlx.DB
	pipeSlots chan struct{}
	// coord is how locks across daemons are kept (cluster.go).
	coord Coordination
	// autoinc is how the server numbers a multi-row INSERT's rows, read
	// once (consecutiveIDs).
	autoinc struct {
		once sync.Once
		step int64 // 0: not consecutive, or unknown
	}
}

// New builds a Store. The clock supplies Queuety's app-clock times
// (available_at, cutoffs); nil means the wall clock.
func New(db *sqlx.DB, tables Tables, clk clock.Clock) (*Store, error) {
	return newStore(db, tables, "", clk)
}

// NewIn builds a Store of database's tables on db, a pool of connections
// to its server that may be in another database: every statement names its
// tables with database, and what the server would take from the
// connection's database (the lock names, the schema checks) is given
// database instead, so a lock is the one a Store of New on that database
// takes.
func NewIn(db *sqlx.DB, database string, tables Tables, clk clock.Clock) (*Store, error) {
	if err := qualifiable(database); err != nil {
		return nil, err
	}
	return newStore(db, tables, database, clk)
}

func newStore(db *sqlx.DB, tables Tables, database string, clk clock.Clock) (*Store, error) {
	q, err := newQueries(tables, database)
	if err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Store{db: db, unsafe: db.Unsafe(), tables: tables, database: database, q: q, clock: clk}, nil
}

// consecutiveIDs reports whether the rows of one multi-row INSERT get
// consecutive ids, step (auto_increment_increment) apart: InnoDB does so
// for a simple INSERT in lock modes 0 and 1, not in 2. Read once; a
// failed read (or a server without the variable) answers no, and callers
// then read the ids back.
func (s *Store) consecutiveIDs(ctx context.Context) (step int64, ok bool) {
	s.autoinc.once.Do(func() {
		var v struct {
			Mode int64 `db:"mode"`
			Step int64 `db:"step"`
		}
		if err := s.db.GetContext(context.WithoutCancel(ctx), &v, s.query(qAutoincSettings)); err != nil {
			return
		}
		if v.Mode <= 1 && v.Step >= 1 {
			s.autoinc.step = v.Step
		}
	})
	return s.autoinc.step, s.autoinc.step > 0
}

// DB returns the underlying handle.
func (s *Store) DB() *sqlx.DB { return s.db }

// Tables returns the resolved table names.
func (s *Store) Tables() Tables { return s.tables }

// Now is the app clock, truncated to what a DATETIME column keeps.
func (s *Store) Now() time.Time { return s.clock.Now().UTC().Truncate(time.Second) }

func (s *Store) query(name string) string {
	q, ok := s.q.get(name)
	if !ok {
		panic("store: unknown query " + name) // a typo in a constant; caught by tests
	}
	return q
}

// in expands "IN (?)" for a named query and rebinds it for the driver.
func (s *Store) in(name string, args ...any) (string, []any, error) {
	q, a, err := sqlx.In(s.query(name), args...)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	return s.db.Rebind(q), a, nil
}

// Transient reports whether err is a deadlock (1213) or lock wait timeout
// (1205): InnoDB rolled the statement or transaction back and the same work
// can simply be tried again.
func Transient(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	return false
}

// ConnectionLost reports whether err means the connection to the server
// broke, so the caller should back off and try again with a new one.
func ConnectionLost(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// Connection killed (MariaDB), server shutting down, server gone;
		// 1047 is a Galera node outside the primary component (cut off from
		// the cluster, or still joining): it serves nothing until it is
		// back, and through a proxy a new connection reaches another node.
		// 1180 (error during COMMIT) is what such a node answers a commit
		// ("Not connected to Primary Component"): the transaction did not
		// commit, and the same write goes through once it is back.
		// 1290 and 1836 are a read-only server: a writer that was just
		// demoted (Aurora's, a primary switched over) while the endpoint
		// still resolves to it; the pool's connections reach the new writer
		// as they are replaced, so the write is retried, never given up.
		switch me.Number {
		case 1927, 1053, 2006, 2013, 1047, 1180, 1290, 1836:
			return true
		}
		return false
	}
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, driverBadConn) || isNetError(err)
}

// Unreachable reports whether err, met while connecting at start-up,
// means the server could not be reached or dropped the connection
// (refused, reset, cut mid-handshake, too many connections, shutting
// down): an outage worth waiting out, unlike a refused login, a missing
// database or table, or a server we cannot use.
func Unreachable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1040 {
		return true
	}
	return ConnectionLost(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// inTx runs fn in a transaction, retrying it quietly on deadlocks and lock
// wait timeouts: under many concurrent claimers these are expected, not errors.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.retrying(ctx, func() error { return s.tryTx(ctx, fn) })
}

// retrying runs one try of a transaction until it succeeds, fails for a
// reason other than a deadlock or lock wait, or has been tried 8 times.
func (s *Store) retrying(ctx context.Context, try func() error) error {
	const maxTries = 8
	for n := 1; ; n++ {
		err := try()
		if err == nil || !Transient(err) || n == maxTries {
			return err
		}
		// Jittered, growing pause so colliding transactions spread out.
		d := time.Duration(n*n)*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
	}
}

func (s *Store) tryTx(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := s.db.BeginTxx(ctx, nil) // READ COMMITTED: the session's level (see Open)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
