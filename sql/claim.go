package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// ClaimParams selects what one claim query may take.
type ClaimParams struct {
	Queue string
	// Handlers restricts the claim to these handler names; nil claims every
	// handler (a worker told to claim everything buries the ones it lacks).
	Handlers []string
	// WorkflowHandlers, when not nil, turns workflow steps on: a step job
	// is claimable when its handler is one of these (the engine's Go step
	// handlers and placeholders) and its workflow is running or paused.
	// Nil keeps workflow jobs out of the claim.
	WorkflowHandlers []string
	// AllWorkflowSteps, with WorkflowHandlers not nil, makes every step of
	// a running or paused workflow claimable whatever its handler: a
	// fallback (the PHP handler pool) runs the ones without a Go handler.
	AllWorkflowSteps bool
	// SkipGroups are concurrency groups found saturated earlier in the same
	// claim: their jobs are left out, so the rows behind them are read.
	SkipGroups []string
	// SkipHandlers are never claimed, whatever Handlers says: handlers
	// found rate limited earlier in the claim, and those this worker must
	// leave to PHP even when it claims everything (state machine actions
	// without a way to run their classes). SkipIDs are the rows the claim
	// already took or deferred (its own row locks do not hide them from a
	// second read of the queue).
	SkipHandlers []string
	SkipIDs      []int64
	// PHPCallbacks claims every batch job and chain link: a PHP pool runs
	// the callbacks Go does not implement. Otherwise a batch job is claimed
	// only when each callback of its batch is in BatchCallbacks, and a
	// job with a chain catch only when the catch is in ChainCatches (Go
	// implementations), so PHP's callbacks stay with PHP workers.
	PHPCallbacks   bool
	BatchCallbacks []string
	ChainCatches   []string
	Limit          int
	// Slices > 1 reads the rows of slice Slice (CRC32(id) % Slices) first,
	// and the others only when the slice has none claimable: daemons on
	// different nodes of a cluster then claim different rows, instead of
	// the same head of the queue, which one node's claim would win and the
	// others' fail certification on.
	Slice, Slices int
}

// ClaimTx is one claim: Select locks claimable rows with FOR UPDATE SKIP
// LOCKED, exactly Queue::claim's predicate batched; Commit writes them
// processing (attempts + 1, reserved_by, reserved_at, the `started` log
// rows) and commits, as Queue::claim does row by row. Handlers start only
// after that commit (see Commit for why).
//
// Other claimers skip the locked rows while the claim is open, PHP's
// included (its claim uses SKIP LOCKED too). If the worker dies before the
// commit, the transaction rolls back and the rows are pending again with
// their attempts unspent, and no handler ran.
type ClaimTx struct {
	s    *Store
	conn *sqlx.Conn // pinned: named locks belong to the connection
	tx   *sqlx.Tx
	// locks are the group locks held until the claim ends.
	locks []string
	// buried: Bury wrote in the claim, so even a claim that takes nothing
	// must commit (see End).
	buried bool
	// token is what this claim writes into the lock rows it takes (see
	// lockRow), made when it takes the first.
	token string
}

// BeginClaim opens a claim.
func (s *Store) BeginClaim(ctx context.Context) (*ClaimTx, error) {
	// READ COMMITTED (the session's level, see Open): no gap locks, so
	// concurrent claims (lanes, other workers) never deadlock on the claim
	// index's gaps.
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &ClaimTx{s: s, conn: conn, tx: tx}, nil
}

// AnyDue reports whether a job of queues is pending and due: the cheap
// look an idle worker takes before it opens a claim (see any-due).
func (s *Store) AnyDue(ctx context.Context, queues []string) (bool, error) {
	if len(queues) == 0 {
		return false, nil
	}
	q, args, err := s.in(qAnyDue, queues)
	if err != nil {
		return false, err
	}
	var one int
	switch err := s.db.QueryRowContext(ctx, q, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", qAnyDue, err)
	}
	return true, nil
}

// end releases the claim's group locks and its connection.
func (c *ClaimTx) end() {
	if len(c.locks) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, l := range c.locks {
			if _, err := c.conn.ExecContext(ctx, c.s.query(qReleaseGroupLock), l); err != nil {
				// Closing the connection releases them for sure.
				_ = c.conn.Raw(func(any) error { return driverBadConn })
				break
			}
		}
		c.locks = nil
	}
	_ = c.conn.Close()
}

// Select locks up to p.Limit claimable rows of one queue, highest priority
// first, then oldest: plain jobs of p.Handlers (all when nil) and, when
// WorkflowHandlers is set or AllWorkflowSteps, workflow steps of running or
// paused workflows.
func (c *ClaimTx) Select(ctx context.Context, p ClaimParams) ([]JobRow, error) {
	which, wargs, ok := c.which(p)
	if !ok {
		return nil, nil
	}
	if len(p.SkipGroups) > 0 {
		which += " AND " + c.s.query(qClaimSkipGroups)
		wargs = append(wargs, p.SkipGroups)
	}
	if len(p.SkipIDs) > 0 {
		which += " AND " + c.s.query(qClaimSkipIDs)
		wargs = append(wargs, p.SkipIDs)
	}
	if p.Slices > 1 {
		rows, err := c.selectSlice(ctx, p, which, wargs, true)
		if err != nil || len(rows) > 0 {
			return rows, err
		}
		// The slice is empty: help with the others' rows, from the far end
		// of the queue, where their owners come last.
		return c.selectSlice(ctx, p, which, wargs, false)
	}
	return c.selectRows(ctx, qClaimJobs, which, append(append([]any{p.Queue}, wargs...), p.Limit))
}

// selectSlice is Select's read of the claim's slice (p.Slices > 1, on a
// cluster): the slice's claimable rows are read without locking, then
// locked by primary key (skipping those another claim holds). A locking
// read of the claim index would lock, for a moment, every row it passes,
// the other nodes' slices included, and a node applying another node's
// claim of such a row aborts the local claim that holds it (a brute-force
// abort): the rolled-back claims this spares were most of them, measured.
//
// With own false it reads the rows outside the slice instead, from the far
// end of the queue (lowest priority, newest first): a daemon whose slice is
// empty helps with the others' rows where their owners reach them last,
// not at the head where their claims would collide.
func (c *ClaimTx) selectSlice(ctx context.Context, p ClaimParams, which string, wargs []any, own bool) ([]JobRow, error) {
	sliced := which + " AND " + c.s.query(qClaimWhichSlice)
	if !own {
		sliced = which + " AND NOT " + c.s.query(qClaimWhichSlice)
	}
	args := append(append([]any{p.Queue}, wargs...), p.Slices, p.Slice, p.Limit)
	q, args, err := sqlx.In(strings.Replace(c.s.query(qClaimJobs), "/*which*/", sliced, 1), args...)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	// claim-jobs without its locking clause: a plain read.
	q = strings.TrimSuffix(strings.TrimSpace(q), "FOR UPDATE SKIP LOCKED")
	if !own {
		q = strings.Replace(q, "ORDER BY job.priority DESC, job.id ASC", "ORDER BY job.priority ASC, job.id DESC", 1)
	}
	var candidates []JobRow
	if err := c.tx.SelectContext(ctx, &candidates, c.s.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	return c.LockJobs(ctx, idsOfRows(candidates))
}

func idsOfRows(rows []JobRow) []int64 {
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return ids
}

// SessionCandidates reads, without locking, up to p.Limit pending
// session-bound jobs of the queues that p's handlers would otherwise
// claim, except those of skipSessions. The caller filters them by what it can satisfy and locks the rest
// with LockJobs.
func (c *ClaimTx) SessionCandidates(ctx context.Context, queues, skipSessions []string, p ClaimParams) ([]JobRow, error) {
	which, wargs, ok := c.which(p)
	if !ok || len(queues) == 0 {
		return nil, nil
	}
	if len(skipSessions) == 0 {
		skipSessions = []string{""} // NOT IN () is not SQL; no session id is empty
	}
	return c.selectRows(ctx, qSessionCandidates, which, append(append([]any{queues, skipSessions}, wargs...), p.Limit))
}

// LockJobs locks the jobs among ids that are still pending and available,
// skipping rows another claimer holds.
func (c *ClaimTx) LockJobs(ctx context.Context, ids []int64) ([]JobRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return c.selectRows(ctx, qLockSessionJobs, "", []any{ids})
}

// Bury buries a locked row the claim will not run (its worker_session
// cannot be read), as claim + bury would leave it, with Queuety's
// `started, buried` log rows.
func (c *ClaimTx) Bury(ctx context.Context, workerID string, row *JobRow, message string) error {
	if _, err := c.tx.ExecContext(ctx, c.s.query(qClaimBury), FitText(message), workerID, row.ID); err != nil {
		return fmt.Errorf("%s: %w", qClaimBury, err)
	}
	attempt := Int(int64(min(row.Attempts+1, 255)))
	started, buried := LogFor(row, EventStarted), LogFor(row, EventBuried)
	started.Attempt, buried.Attempt = attempt, attempt
	buried.ErrorMessage = String(message)
	c.buried = true
	return c.s.insertLogs(ctx, c.tx, []LogRow{started, buried})
}

// End closes a claim that runs nothing: every selected row is handed back
// untouched (a rollback), except the rows Bury buried, which are kept (a
// commit), so a lone bad row does not come back every poll.
func (c *ClaimTx) End(ctx context.Context, workerID string) error {
	if c.buried {
		return c.Commit(ctx, ClaimCommit{WorkerID: workerID})
	}
	return c.Rollback()
}

// Sessions runs the session statements inside the claim's transaction:
// session admission locks its session rows there, so they commit (or roll
// back) with the claim.
func (c *ClaimTx) Sessions() Sessions { return Sessions{s: c.s, q: c.tx} }

// which builds the claim-which-* condition for p and its arguments; ok is
// false when p can claim nothing.
func (c *ClaimTx) which(p ClaimParams) (which string, args []any, ok bool) {
	steps := p.AllWorkflowSteps || p.WorkflowHandlers != nil
	if p.Limit <= 0 || (p.Handlers != nil && len(p.Handlers) == 0 && !steps) {
		return "", nil, false
	}
	// IN () is not SQL: an empty list becomes one name no job has.
	orNone := func(h []string) []string {
		if len(h) == 0 {
			return []string{""}
		}
		return h
	}
	which = c.s.query(qClaimWhichPlain)
	if p.Handlers != nil {
		which = c.s.query(qClaimWhichHandlers)
		args = append(args, orNone(p.Handlers))
	}
	switch {
	case p.AllWorkflowSteps:
		which = "(" + which + " OR " + c.s.query(qClaimWhichAllSteps) + ")"
	case p.WorkflowHandlers != nil:
		which = "(" + which + " OR " + c.s.query(qClaimWhichSteps) + ")"
		args = append(args, orNone(p.WorkflowHandlers))
	}
	if !p.PHPCallbacks {
		cb := orNone(p.BatchCallbacks)
		which = "(" + which + " AND " + c.s.query(qClaimWhichBatchesGo) + " AND " + c.s.query(qClaimWhichChainCatchGo) + ")"
		args = append(args, cb, cb, cb, orNone(p.ChainCatches))
	}
	if len(p.SkipHandlers) > 0 {
		which = "(" + which + " AND " + c.s.query(qClaimSkipHandlers) + ")"
		args = append(args, p.SkipHandlers)
	}
	return which, args, true
}

// selectRows runs a claim query with its /*which*/ condition in place.
func (c *ClaimTx) selectRows(ctx context.Context, name, which string, args []any) ([]JobRow, error) {
	q, args, err := sqlx.In(strings.Replace(c.s.query(name), "/*which*/", which, 1), args...)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var rows []JobRow
	if err := c.tx.SelectContext(ctx, &rows, c.s.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return rows, nil
}

// LockGroups takes a named lock per concurrency group (sorted, so claims
// never deadlock on each other), held until the claim ends. Counting a
// group's processing jobs under its lock and committing before releasing it
// serializes admission between Go workers, which PHP's check does not. It
// returns the groups it could lock within timeout; jobs of the others wait.
func (c *ClaimTx) LockGroups(ctx context.Context, groups []string, timeout time.Duration) ([]string, error) {
	return c.lockNamed(ctx, "", groups, timeout)
}

// lockNamed takes a named lock per name of one kind ("" for concurrency
// groups, see claim_limits.go for the others), sorted, held until the
// claim ends; it returns the names it locked within timeout.
func (c *ClaimTx) lockNamed(ctx context.Context, kind string, groups []string, timeout time.Duration) ([]string, error) {
	groups = slices.Clone(groups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	var locked []string
	for _, g := range groups {
		if c.s.coord == CoordinationRows {
			// Held until the claim commits or rolls back; see lockRow.
			ok, err := c.lockRow(ctx, c.s.rowLockKey("admission", kind+g), c.lockToken(), timeout)
			if err != nil {
				return locked, fmt.Errorf("group lock %q: %w", g, err)
			}
			if ok {
				locked = append(locked, g)
			}
			continue
		}
		name := c.s.groupLockKey(kind + g)
		var got sql.NullInt64
		if err := c.conn.GetContext(ctx, &got, c.s.query(qGetGroupLock), name, timeout.Seconds()); err != nil {
			return locked, fmt.Errorf("group lock %q: %w", g, err)
		}
		if got.Valid && got.Int64 == 1 {
			c.locks = append(c.locks, name)
			locked = append(locked, g)
		}
	}
	return locked, nil
}

// groupLockKey is the key of a group's named lock: the jobs table and the
// group; the server adds the database and hashes it (get-group-lock).
func (s *Store) groupLockKey(group string) string {
	return s.tables["jobs"] + "\x00" + group
}

// ProcessingByGroup counts processing jobs per concurrency group.
func (c *ClaimTx) ProcessingByGroup(ctx context.Context, groups []string) (map[string]int, error) {
	out := map[string]int{}
	if len(groups) == 0 {
		return out, nil
	}
	q, args, err := c.s.in(qProcessingByGroup, groups)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Group string `db:"grp"`
		N     int    `db:"n"`
	}
	if err := c.tx.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("concurrency groups: %w", err)
	}
	for _, r := range rows {
		out[r.Group] = r.N
	}
	return out, nil
}

// Rollback abandons the claim: every selected row is pending again,
// untouched.
func (c *ClaimTx) Rollback() error {
	err := c.tx.Rollback()
	c.end()
	return err
}

// ClaimCommit is what a claim writes before any handler starts: the rows
// it took become processing rows held by WorkerID, with their `started`
// log rows (workflow steps log theirs in the engine).
type ClaimCommit struct {
	WorkerID string
	Running  []int64
	Logs     []LogRow
}

// Commit writes the claim and commits. On error the transaction is rolled
// back and no row changed. Only after Commit returns nil may the caller run
// the claimed jobs: a claim the server rolls back (a deadlock victim, a
// lost connection) then never leaves a handler running on a row that is
// pending again, which another worker (PHP's included) would run a second
// time. When the COMMIT's outcome is unknown (the connection died during
// it) the error wraps ErrCommitUnknown and the caller runs nothing until
// SettleClaim has read back which rows the claim holds: those it runs,
// once; the others are not its own.
func (c *ClaimTx) Commit(ctx context.Context, f ClaimCommit) (err error) {
	defer func() {
		if err != nil {
			_ = c.tx.Rollback()
		}
		c.end()
	}()
	if len(f.Running) > 0 {
		where, args := idRanges(f.Running)
		q := strings.Replace(c.s.query(qClaimRunning), "/*ids*/", where, 1)
		if _, err := c.tx.ExecContext(ctx, q, append([]any{f.WorkerID}, args...)...); err != nil {
			return fmt.Errorf("%s: %w", qClaimRunning, err)
		}
	}
	if err := c.s.insertLogs(ctx, c.tx, f.Logs); err != nil {
		return err
	}
	if err := c.tx.Commit(); err != nil {
		if ConnectionLost(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// The COMMIT may have been applied: only a read tells (SettleClaim).
			return fmt.Errorf("claim commit: %w: %w", ErrCommitUnknown, err)
		}
		return fmt.Errorf("claim commit: %w", err)
	}
	return nil
}

// ErrCommitUnknown is in the error of a Commit whose COMMIT went out but
// whose answer never came (the connection died, or the context ended): the
// claim may have committed. SettleClaim tells.
var ErrCommitUnknown = errors.New("outcome unknown")

// idRanges writes a set of ids as "id BETWEEN ? AND ? OR ... OR id IN (...)":
// runs of consecutive ids as ranges, lone ids in one IN list.
func idRanges(ids []int64) (string, []any) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var parts []string
	var args, singles []any
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, "id BETWEEN ? AND ?")
			args = append(args, sorted[i], sorted[j])
		} else {
			singles = append(singles, sorted[i])
		}
		i = j + 1
	}
	if len(singles) > 0 {
		parts = append(parts, "id IN (?"+strings.Repeat(",?", len(singles)-1)+")")
		args = append(args, singles...)
	}
	return strings.Join(parts, " OR "), args
}
