package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Pipelined transactions: a WorkflowTx whose statements travel in as few
// packets as the results its caller needs allow.
//
// A local activity's outcome transaction (internal/engine/local_activity.go) is
// seven statements between START TRANSACTION and COMMIT, and on a busy
// machine each round trip costs more than the server's work on it: the
// client and the server each wait for the other to be scheduled. Most of
// those statements need no answer before the next is sent: a fenced
// UPDATE is checked by its row count, an INSERT of log or event rows by
// its success. A pipelined transaction queues such statements and sends
// them, joined, with the next statement whose answer is needed now (an
// INSERT whose id the caller uses, a read), on a connection that allows
// several statements a packet (the driver's multiStatements), and reads
// each one's row count from the reply. START TRANSACTION rides with the
// first packet and COMMIT with the last, so a local step that starts the
// next one takes three round trips instead of nine.
//
// What does not change: the statements, their order and the transaction
// they run in. The server stops at the first failing statement of a
// packet and leaves the transaction open, so a failure rolls back
// everything as before. A queued statement's check (a fence) runs when its
// reply arrives, before anything is read or committed: a packet that
// holds a fence never holds the COMMIT.

// pipeline is the queue and connection of one pipelined transaction.
type pipeline struct {
	ctx    context.Context
	conn   *sqlx.Conn // unsafe (SELECT * into structs that map a subset)
	queued []pipedStmt
	open   bool // a packet was sent (the first begins the transaction) and no COMMIT went through
}

// pipedStmt is one statement waiting for the next packet. check, when set,
// is given the statement's row count once the reply arrives.
type pipedStmt struct {
	name  string
	query string
	args  []any
	check func(n int64) error
}

// UsePipeline gives the store a handle whose connections allow several
// statements a packet (OpenPipeline), for PipelinedWorkflowTx; at most
// its MaxOpenConns transactions are pipelined at once, the others run as
// WorkflowTx does.
func (s *Store) UsePipeline(db *sqlx.DB) {
	s.pipe = db.Unsafe()
	s.pipeSlots = make(chan struct{}, max(1, db.Stats().MaxOpenConnections))
}

// PipelinedWorkflowTx is WorkflowTx on a pipelined transaction when the
// store has a pipeline connection free, else WorkflowTx itself. fn sees
// the same WorkflowTx methods with the same results; a write whose row
// count is not needed at once (WorkflowTx.execChecked) is sent with the
// next statement that needs an answer, and its check runs then.
func (s *Store) PipelinedWorkflowTx(ctx context.Context, fn func(*WorkflowTx) error) error {
	if s.pipe == nil {
		return s.WorkflowTx(ctx, fn)
	}
	select {
	case s.pipeSlots <- struct{}{}:
	default:
		return s.WorkflowTx(ctx, fn)
	}
	defer func() { <-s.pipeSlots }()
	return s.retrying(ctx, func() error { return s.tryPipelined(ctx, fn) })
}

func (s *Store) tryPipelined(ctx context.Context, fn func(*WorkflowTx) error) (err error) {
	conn, err := s.pipe.Connx(ctx)
	if err != nil {
		return err
	}
	p := &pipeline{ctx: ctx, conn: conn}
	defer func() {
		if err != nil {
			p.rollback()
		}
		_ = conn.Close()
	}()
	p.queue(pipedStmt{name: "begin", query: "START TRANSACTION"})
	w := &WorkflowTx{s: s, tx: conn, utx: conn, ctx: ctx, pipe: p}
	if err := fn(w); err != nil {
		return err
	}
	if err := w.finish(); err != nil {
		return err
	}
	return p.commit()
}

func (p *pipeline) queue(st pipedStmt) { p.queued = append(p.queued, st) }

// send sends the queued statements and last (when its query is not empty)
// in one packet, runs the queued ones' checks, and returns last's row
// count and insert id.
func (p *pipeline) send(last pipedStmt) (affected, id int64, err error) {
	stmts := p.queued
	p.queued = nil
	if last.query != "" {
		stmts = append(stmts, last)
	}
	if len(stmts) == 0 {
		return 0, 0, nil
	}
	counts, ids, err := p.roundTrip(stmts)
	if err != nil {
		return 0, 0, err
	}
	for i, st := range stmts {
		if st.check != nil {
			if err := st.check(counts[i]); err != nil {
				return 0, 0, err
			}
		}
	}
	return counts[len(counts)-1], ids[len(ids)-1], nil
}

// flush sends what is queued (a read is about to be sent).
func (p *pipeline) flush() error {
	_, _, err := p.send(pipedStmt{})
	return err
}

// commit sends what is queued with COMMIT, or first on its own when a
// queued statement is checked: a failed fence must stop the commit.
func (p *pipeline) commit() error {
	for _, st := range p.queued {
		if st.check != nil {
			if err := p.flush(); err != nil {
				return err
			}
			break
		}
	}
	_, _, err := p.send(pipedStmt{name: "commit", query: "COMMIT"})
	if err == nil {
		p.open = false
	}
	return err
}

// rollback ends a transaction that failed. A connection the ROLLBACK
// cannot be sent on is discarded, never handed back with a transaction
// open.
func (p *pipeline) rollback() {
	p.queued = nil
	if !p.open {
		return
	}
	if _, err := p.conn.ExecContext(context.WithoutCancel(p.ctx), "ROLLBACK"); err != nil {
		_ = p.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	p.open = false
}

// roundTrip sends stmts as one packet and returns each one's row count
// and insert id. The driver interpolates the arguments (every query here
// is one of ours, with ? only as placeholders).
func (p *pipeline) roundTrip(stmts []pipedStmt) (counts, ids []int64, err error) {
	var b strings.Builder
	var names []string
	n := 0
	for _, st := range stmts {
		n += len(st.args)
	}
	args := make([]driver.NamedValue, 0, n)
	for i, st := range stmts {
		if i > 0 {
			b.WriteString(";\n")
		}
		b.WriteString(st.query)
		names = append(names, st.name)
		for _, a := range st.args {
			args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: a})
		}
	}
	p.open = true // even when the packet fails: the server may have begun
	err = p.conn.Raw(func(dc any) error {
		if c, ok := dc.(driver.NamedValueChecker); ok {
			for i := range args {
				if err := c.CheckNamedValue(&args[i]); err != nil {
					return err
				}
			}
		}
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the driver's connection cannot execute statements")
		}
		res, err := ex.ExecContext(p.ctx, b.String(), args)
		if err != nil {
			return err
		}
		mr, ok := res.(mysql.Result)
		if !ok {
			return errors.New("the driver did not report the results of a multi-statement packet")
		}
		counts, ids = mr.AllRowsAffected(), mr.AllLastInsertIds()
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", strings.Join(names, "+"), err)
	}
	if len(counts) != len(stmts) || len(ids) != len(stmts) {
		return nil, nil, fmt.Errorf("%s: %d results for %d statements", strings.Join(names, "+"), len(counts), len(stmts))
	}
	return counts, ids, nil
}

// pipedExecer queues what insertLogs and insertTuples send.
type pipedExecer struct {
	p    *pipeline
	name string
}

func (e pipedExecer) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	e.p.queue(pipedStmt{name: e.name, query: query, args: args})
	return queuedResult{}, nil
}

// queuedResult is the result of a statement that is not sent yet: its
// callers only look at the error.
type queuedResult struct{}

func (queuedResult) LastInsertId() (int64, error) {
	return 0, errors.New("a queued statement has no insert id yet")
}
func (queuedResult) RowsAffected() (int64, error) {
	return 0, errors.New("a queued statement has no row count yet")
}
