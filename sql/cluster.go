package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Coordination is how daemons on one database keep their mutual
// exclusions: admission of concurrency groups, rate limits and cost
// budgets, and the retention sweep's one-at-a-time.
type Coordination int

const (
	// CoordinationNamed uses GET_LOCK: one round trip a lock, nothing
	// written, released with the connection. Right for a single server (a
	// primary, with or without replicas), where every daemon's lock is
	// taken on the same server.
	CoordinationNamed Coordination = iota
	// CoordinationRows writes a row of the locks table instead, in the
	// transaction it guards. A Galera node keeps GET_LOCK to itself (a lock
	// held on node 1 is granted on node 2), so on a cluster only a written
	// row excludes: two transactions on two nodes that wrote the same row
	// cannot both commit. Reads that must see the cluster's latest writes
	// are made causal (wsrep_sync_wait).
	CoordinationRows
)

func (c Coordination) String() string {
	if c == CoordinationRows {
		return "rows"
	}
	return "named"
}

// ParseCoordination reads a --coordination value: "auto" (or "") is
// DetectCoordination's answer, "named" and "rows" force one.
func ParseCoordination(s string) (c Coordination, auto bool, err error) {
	switch s {
	case "", "auto":
		return CoordinationNamed, true, nil
	case "named":
		return CoordinationNamed, false, nil
	case "rows", "cluster":
		return CoordinationRows, false, nil
	}
	return 0, false, fmt.Errorf("coordination %q: want auto, named or rows", s)
}

// DetectCoordination asks the server whether it is a node of a running
// Galera cluster (wsrep_on). A server without wsrep is not.
func (s *Store) DetectCoordination(ctx context.Context) (Coordination, error) {
	var on sql.NullString
	err := s.db.GetContext(ctx, &on, s.query(qClusterDetect))
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1193: // unknown system variable
		return CoordinationNamed, nil
	case err != nil:
		return CoordinationNamed, fmt.Errorf("%s: %w", qClusterDetect, err)
	case on.Valid && (on.String == "1" || on.String == "ON"):
		return CoordinationRows, nil
	}
	return CoordinationNamed, nil
}

// SetCoordination chooses how the store's locks are kept (see
// Coordination); the default is CoordinationNamed. Set it before use.
func (s *Store) SetCoordination(c Coordination) { s.coord = c }

// Coordination is the store's choice.
func (s *Store) Coordination() Coordination { return s.coord }

// causal makes q, a read that must see every write the cluster committed
// before it, wait until this node has applied them (wsrep_sync_wait=1, for
// this statement only). On a single server every read is causal already.
//
// Only outside a transaction: inside one Galera skips the wait (its
// wsrep_causal_reads counter does not move) and the read sees whatever the
// node has applied. A transaction that must read causally begins after a
// wait of its own (inFencedTx).
func (s *Store) causal(q string) string {
	if s.coord != CoordinationRows {
		return q
	}
	return "SET STATEMENT wsrep_sync_wait = 1 FOR " + q
}

// inFencedTx is inTx for a transaction that reads the attempt fence
// (lockAttempts) and writes nothing when the attempt does not hold its row.
// On a cluster a stale read there is the one stale read certification does
// not catch: a write based on it conflicts with the write it missed and is
// rolled back, but a refusal writes nothing, and the row is left
// processing until the stale sweep. A completion retried after a failover
// runs on a node that may not have applied the claim yet (and with two
// writers, always may): so each try first waits, on the connection the
// transaction then runs on, until its node has applied every write the
// cluster committed before.
func (s *Store) inFencedTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	if s.coord != CoordinationRows {
		return s.inTx(ctx, fn)
	}
	return s.retrying(ctx, func() error { return s.tryCausalTx(ctx, fn) })
}

// tryCausalTx is tryTx after a causal wait on the transaction's own
// connection (the pool could hand another one to a node the wait did not
// cover).
func (s *Store) tryCausalTx(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close() // back to the pool
	var one int
	if err := conn.GetContext(ctx, &one, s.causal(s.query(qClusterSyncWait))); err != nil {
		return fmt.Errorf("%s: %w", qClusterSyncWait, err)
	}
	tx, err := conn.BeginTxx(ctx, nil) // READ COMMITTED: the session's level (see Open)
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

// rowLockKey is the locks-table key of one of the daemon's locks: the jobs
// table and the name, hashed (the locks table belongs to one database, so
// the database need not be in it), under a prefix no plugin key has.
func (s *Store) rowLockKey(kind, name string) string {
	sum := sha256.Sum256([]byte(s.tables["jobs"] + "\x00" + name))
	return "queuety-go:" + kind + ":" + hex.EncodeToString(sum[:20])
}

// lockRow takes an admission lock as a row of the locks table, inside the
// claim transaction, waiting at most timeout
// for a claim of this node that holds it (whole seconds). ok is false when the wait ran
// out: the statement is undone, the transaction goes on. A timeout of 0
// does not wait.
func (c *ClaimTx) lockRow(ctx context.Context, key, owner string, timeout time.Duration) (ok bool, err error) {
	wait := max(0, int(math.Ceil(timeout.Seconds())))
	q := strings.Replace(c.s.query(qClusterAdmissionLock), "/*wait*/0", strconv.Itoa(wait), 1)
	_, err = c.tx.ExecContext(ctx, q, key, owner)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1205 { // lock wait timeout
		return false, nil
	}
	return err == nil, err
}

// lockToken is the claim's owner value in the lock rows it writes: random,
// so that the row always changes. An UPDATE that leaves a row as it was
// changes nothing a cluster replicates, and two nodes' claims that each
// "wrote" the same values would both commit.
func (c *ClaimTx) lockToken() string {
	if c.token == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		c.token = "queuety-go:" + hex.EncodeToString(b[:])
	}
	return c.token
}

// Lease takes the lease name for owner for up to d, without waiting: a
// row of the locks table taken by a conditional UPDATE, which holds across
// a cluster's nodes and outlives no daemon by more than d. ok is false
// when another owner holds it; release hands it back early.
func (s *Store) Lease(ctx context.Context, name, owner string, d time.Duration) (release func(), ok bool, err error) {
	key := s.rowLockKey("lease", name)
	if _, err := s.db.ExecContext(ctx, s.query(qClusterLeaseCreate), key); err != nil {
		return nil, false, fmt.Errorf("lease %s: %w", name, err)
	}
	res, err := s.db.ExecContext(ctx, s.query(qClusterLeaseTake), owner, max(1, int(d.Seconds())), key, owner)
	if err != nil {
		return nil, false, fmt.Errorf("lease %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, false, err
	}
	return func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A failed release only makes the lease run out at its expiry.
		_, _ = s.db.ExecContext(c, s.query(qClusterLeaseRelease), key, owner)
	}, true, nil
}

// SettleClaim tells, after a claim whose COMMIT's outcome is unknown (the
// connection died during it), which of its rows the claim holds: those
// processing under workerID with the attempt the claim spent
// (min(attempts + 1, 255) of the row as the claim read it). Each of them
// committed and is the caller's to run, once; the others did not (the rows
// are pending again, or another worker claimed them since) and are left
// alone. The read is causal on a cluster (see causal), so a claim a node
// applied before the read is seen. The caller retries on a new connection
// until the server answers.
func (s *Store) SettleClaim(ctx context.Context, workerID string, rows []JobRow) ([]JobRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	q, args, err := s.in(qClaimSettle, ids, workerID)
	if err != nil {
		return nil, err
	}
	var held []struct {
		ID       int64 `db:"id"`
		Attempts int   `db:"attempts"`
	}
	if err := s.db.SelectContext(ctx, &held, s.causal(q), args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qClaimSettle, err)
	}
	attempts := make(map[int64]int, len(held))
	for _, h := range held {
		attempts[h.ID] = h.Attempts
	}
	var out []JobRow
	for _, r := range rows {
		if a, ok := attempts[r.ID]; ok && a == min(r.Attempts+1, 255) {
			out = append(out, r)
		}
	}
	return out, nil
}

// leaseOwner names this process in the leases it takes.
func leaseOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%.40s-%d-%x", host, os.Getpid(), processToken)
}

// processToken tells this process apart from an earlier one with its pid.
var processToken = func() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}()

// ClusterSlice reads this node's index in the cluster and the cluster's
// size (wsrep_local_index, wsrep_cluster_size): the slice of the backlog a
// daemon connected here claims first (ClaimParams.Slices). ok is false off
// a cluster.
func (s *Store) ClusterSlice(ctx context.Context) (index, size int, ok bool, err error) {
	// Off a cluster the index reads as the unsigned -1, and the size 0.
	var v struct {
		Index sql.NullString `db:"idx"`
		Size  sql.NullString `db:"size"`
	}
	if err := s.db.GetContext(ctx, &v, s.query(qClusterSlice)); err != nil {
		return 0, 0, false, fmt.Errorf("%s: %w", qClusterSlice, err)
	}
	i, ierr := strconv.Atoi(v.Index.String)
	n, nerr := strconv.Atoi(v.Size.String)
	if ierr != nil || nerr != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, false, nil
	}
	return i, n, true, nil
}
