package store

import (
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/commiteater"
)

// A claim whose COMMIT went unanswered is settled by reading it back: the
// rows processing under the worker with the attempt the claim spent are
// its own; a claim that did not commit, another worker's claim of the same
// rows, and a later attempt of the same worker are not.
func TestSettleClaimReadsBackTheHeldRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dispatchN(6, InsertJob{})

	// Committed: every row is held by w1 at attempt 1.
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	read, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 2})
	require.NoError(t, err)
	require.NoError(t, c.Commit(e.ctx, ClaimCommit{WorkerID: "w1", Running: idsOf(read)}))
	held, err := e.s.SettleClaim(e.ctx, "w1", read)
	require.NoError(t, err)
	require.Equal(t, idsOf(read), idsOf(held))
	other, err := e.s.SettleClaim(e.ctx, "w2", read)
	require.NoError(t, err)
	require.Empty(t, other, "another worker's reading holds nothing")

	// Rolled back: the rows stay pending, nothing is held.
	c, err = e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	lost, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 2})
	require.NoError(t, err)
	require.NoError(t, c.Rollback())
	held, err = e.s.SettleClaim(e.ctx, "w1", lost)
	require.NoError(t, err)
	require.Empty(t, held)

	// Claimed since by another worker: not w1's.
	taken := e.claimRunning("w2", "default", 2)
	require.Equal(t, idsOf(lost), idsOf(taken))
	held, err = e.s.SettleClaim(e.ctx, "w1", lost)
	require.NoError(t, err)
	require.Empty(t, held)

	// The fence is the attempt: w1 holding the row at a later attempt
	// (handed back and claimed again) does not make an older claim its own.
	e.hold(read[0].ID, "w1", 3)
	held, err = e.s.SettleClaim(e.ctx, "w1", read)
	require.NoError(t, err)
	require.Equal(t, []int64{read[1].ID}, idsOf(held))
}

// A connection that dies during COMMIT, after the server applied it, makes
// Commit's error say the outcome is unknown (ErrCommitUnknown), and
// SettleClaim then finds the claim's rows held: the caller runs them at
// once instead of leaving them processing until the stale sweep. (A proxy
// between the store and the server forwards the COMMIT, swallows the
// server's OK and closes the client's connection.)
func TestClaimCommitUnansweredIsSettled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dispatchN(3, InsertJob{})
	p := commiteater.New(t, e.dsn)
	db, err := Open(e.ctx, p.DSN, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, e.tables, e.clk)
	require.NoError(t, err)

	c, err := s.BeginClaim(e.ctx)
	require.NoError(t, err)
	read, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 3})
	require.NoError(t, err)
	require.Len(t, read, 3)
	p.Arm()
	err = c.Commit(e.ctx, ClaimCommit{WorkerID: "w1", Running: idsOf(read)})
	require.ErrorIs(t, err, ErrCommitUnknown)
	require.EqualValues(t, 1, p.Eaten(), "the proxy swallowed the COMMIT's answer")
	held, err := s.SettleClaim(e.ctx, "w1", read)
	require.NoError(t, err)
	require.Equal(t, idsOf(read), idsOf(held), "the COMMIT was applied: the rows are the claim's")
}

// With row coordination (a cluster) an admission lock is a row of the
// locks table written in the claim: a second claim cannot take it while
// the first is open, and can once it ended.
func TestRowCoordinationAdmissionLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.s.SetCoordination(CoordinationRows)
	a, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err := a.LockGroups(e.ctx, []string{"b", "a", "a"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, locked)
	rates, err := a.LockRates(e.ctx, []string{"a"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, rates, "a rate lock is apart from the group of the same name")

	b, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err = b.LockGroups(e.ctx, []string{"c", "a"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, locked, "a is held by the open claim")
	require.NoError(t, b.Rollback())

	require.NoError(t, a.Commit(e.ctx, ClaimCommit{WorkerID: "w"}))
	owner := func() string {
		var o string
		require.NoError(t, e.db.Get(&o, e.s.query(qClusterLockOwner), e.s.rowLockKey("admission", "a")))
		return o
	}
	first := owner()
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err = c.LockGroups(e.ctx, []string{"a", "b"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, locked)
	require.NoError(t, c.Commit(e.ctx, ClaimCommit{WorkerID: "w"}))
	// Each claim changes the row: a write that leaves a row as it was is
	// not replicated, and would not exclude a claim on another node.
	require.NotEqual(t, first, owner())
	require.Zero(t, e.count("SELECT COUNT(*) FROM {locks} WHERE lock_key NOT LIKE 'queuety-go:admission:%'"),
		"only the daemon's own keys are written")
}

// A lease is held by one owner at a time until released or expired.
func TestLeaseHeldByOneOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release, ok, err := e.s.Lease(e.ctx, "retention", "a", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = e.s.Lease(e.ctx, "retention", "b", time.Hour)
	require.NoError(t, err)
	require.False(t, ok, "held by a")
	_, ok, err = e.s.Lease(e.ctx, "other", "b", time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "another lease is free")
	release()
	releaseB, ok, err := e.s.Lease(e.ctx, "retention", "b", time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "released by a")
	releaseB()
	// An expired lease is free whoever held it.
	e.exec("UPDATE {locks} SET owner = 'c', expires_at = NOW() - INTERVAL 1 SECOND WHERE lock_key = ?", e.s.rowLockKey("lease", "retention"))
	_, ok, err = e.s.Lease(e.ctx, "retention", "a", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
}

// With row coordination the retention sweep's lock is a lease, so two
// stores (two daemons) cannot both sweep.
func TestRetentionLockIsALeaseOnACluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.s.SetCoordination(CoordinationRows)
	release, ok, err := e.s.RetentionLock(e.ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {locks} WHERE lock_key = ? AND expires_at > NOW()", e.s.rowLockKey("lease", "retention")))
	release()
	require.Zero(t, e.count("SELECT COUNT(*) FROM {locks} WHERE lock_key = ? AND expires_at > NOW()", e.s.rowLockKey("lease", "retention")))
}

// A single server is not a cluster: named locks stay.
func TestDetectCoordinationOnOneServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, err := e.s.DetectCoordination(e.ctx)
	require.NoError(t, err)
	require.Equal(t, CoordinationNamed, c)
	_, _, ok, err := e.s.ClusterSlice(e.ctx)
	require.NoError(t, err)
	require.False(t, ok, "no slice off a cluster")
}

// A sliced claim reads its slice first and the rest only when the slice has
// nothing claimable, from the far end.
func TestClaimSliceFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.dispatchN(12, InsertJob{})
	slice := func(id int64) uint32 { return crc32.ChecksumIEEE([]byte(strconv.FormatInt(id, 10))) % 2 }
	var mine, theirs []int64
	for _, id := range ids {
		if slice(id) == 0 {
			mine = append(mine, id)
		} else {
			theirs = append(theirs, id)
		}
	}
	require.NotEmpty(t, mine)
	require.NotEmpty(t, theirs)
	p := ClaimParams{Queue: "default", Limit: 100, Slice: 0, Slices: 2}
	require.Equal(t, mine, e.claimIDs(p), "only the slice while it has rows")
	for _, id := range mine {
		e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", id)
	}
	require.Equal(t, theirs, e.claimIDs(p), "the rest once the slice is empty")
	p.Limit = 2
	require.Equal(t, theirs[len(theirs)-2:], e.claimIDs(p), "from the far end of the queue, where their owners come last")
}

// On a cluster the completion's careful path reads who holds each row
// causally (a node may not have applied the claim yet after a failover);
// the statement runs on a single server too, and refuses an attempt that
// does not hold its row as before.
func TestCausalAttemptFenceWithRowCoordination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.s.SetCoordination(CoordinationRows)
	held := e.hold(e.dispatch(InsertJob{}), "w1", 1)
	lost := e.hold(e.dispatch(InsertJob{}), "w2", 1)
	res, err := e.s.CompleteJobs(e.ctx, []Completion{
		{Attempt: held, Log: logRow(held.ID, EventCompleted, 1)},
		{Attempt: Attempt{ID: lost.ID, Attempt: 1, WorkerID: "w1"}, Log: logRow(lost.ID, EventCompleted, 1)},
	})
	require.NoError(t, err)
	require.Equal(t, []int64{held.ID}, res.Completed)
	require.Equal(t, []int64{lost.ID}, res.Refused)
}

// On a cluster every transaction that reads the attempt fence (a
// completion's careful path, a failure, a hand-back, a workflow step's
// transition) begins after a causal
// wait of its own, sent before BEGIN on the transaction's connection.
// Galera skips wsrep_sync_wait inside a transaction (on a node its
// wsrep_causal_reads does not move), so a fence read there saw only what
// the node had applied: on a node that had not applied the claim yet (a
// completion retried after a failover, or two writers) the attempt was
// refused and its row left processing until the stale sweep. The
// statements are read off the wire; a single server runs them too.
func TestFenceTransactionsWaitBeforeTheyBegin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := commiteater.New(t, e.dsn)
	db, err := Open(e.ctx, p.DSN, 4, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, e.tables, e.clk)
	require.NoError(t, err)
	s.SetCoordination(CoordinationRows)

	held := e.hold(e.dispatch(InsertJob{}), "w1", 1)
	lost := Attempt{ID: e.hold(e.dispatch(InsertJob{}), "w2", 1).ID, Attempt: 1, WorkerID: "w1"}
	res, err := s.CompleteJobs(e.ctx, []Completion{
		{Attempt: held, Log: logRow(held.ID, EventCompleted, 1)},
		{Attempt: lost, Log: logRow(lost.ID, EventCompleted, 1)},
	})
	require.NoError(t, err)
	require.Equal(t, []int64{held.ID}, res.Completed)
	require.Equal(t, []int64{lost.ID}, res.Refused)
	applied, err := s.FailJob(e.ctx, Failure{Attempt: lost, Delay: time.Second})
	require.NoError(t, err)
	require.False(t, applied)
	n, err := s.UnclaimJobs(e.ctx, []Attempt{lost})
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, s.WorkflowTx(e.ctx, func(w *WorkflowTx) error {
		_, err := w.LockJob(lost.ID)
		return err
	}))

	fence, _, _ := strings.Cut(s.query(qLockAttempts), " FROM")
	wait := s.causal(s.query(qClusterSyncWait))
	fences := 0
	for _, conn := range p.Statements() {
		begun := -1 // the connection's last BEGIN
		for i, q := range conn {
			if strings.HasPrefix(q, "START TRANSACTION") {
				begun = i
			}
			if !strings.HasPrefix(q, fence) {
				continue
			}
			fences++
			require.Positive(t, begun, "the fence is read in a transaction, after a statement: %q", conn)
			require.Equal(t, wait, conn[begun-1], "the statement before the fence's BEGIN is the causal wait: %q", conn)
		}
	}
	require.Equal(t, 3, fences, "the careful path, the failure and the hand-back each read the fence once")
	// Every transaction that reads before it writes, a workflow step's
	// too; the completion's fast path (an UPDATE fenced in its WHERE) needs
	// no wait: on a node behind, its write conflicts with the one it missed
	// and fails certification.
	reads := 0
	for _, conn := range p.Statements() {
		for i, q := range conn {
			if strings.HasPrefix(q, "START TRANSACTION") && i+1 < len(conn) && strings.HasPrefix(conn[i+1], "SELECT") {
				reads++
				require.Positive(t, i, "%q", conn)
				require.Equal(t, wait, conn[i-1], "the transaction begins after the causal wait: %q", conn)
			}
		}
	}
	require.Equal(t, 4, reads)
}
