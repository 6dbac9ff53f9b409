package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// ErrJobNotFound is returned by by-id operations on a missing job.
var ErrJobNotFound = errors.New("job not found")

// DateTime formats t the way PHP's gmdate('Y-m-d H:i:s') does.
func DateTime(t time.Time) string { return t.UTC().Format(time.DateTime) }

// InsertJob are the columns Queue::dispatch writes. Payload is the exact
// JSON bytes; callers encode it with internal/phpjson.
type InsertJob struct {
	Queue            string
	Handler          string
	Payload          []byte
	Priority         int
	Delay            time.Duration
	MaxAttempts      int
	Unique           bool
	WorkflowID       sql.NullInt64
	StepIndex        sql.NullInt64
	DependsOn        sql.NullInt64
	BatchID          sql.NullInt64
	ConcurrencyGroup string
	ConcurrencyLimit int
	CostUnits        int
	// SessionID and WorkerSession bind the job to a worker session
	// (jobs.session_id, jobs.worker_session: the normalized options as
	// PHP-encoded JSON); empty for an ordinary job.
	SessionID     string
	WorkerSession []byte
}

// PayloadHash is Queuety's payload_hash: sha256 hex of the exact bytes.
func PayloadHash(payload []byte) string {
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// InsertJob writes one job as Queue::dispatch does and returns its id. With
// Unique, a pending or processing job with the same handler and payload bytes
// wins and its id is returned with existing=true.
func (s *Store) InsertJob(ctx context.Context, p InsertJob) (id int64, existing bool, err error) {
	hash := sql.NullString{}
	if p.Unique {
		hash = String(PayloadHash(p.Payload))
		err := s.db.GetContext(ctx, &id, s.query(qFindUniqueJob), p.Handler, hash.String)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, false, fmt.Errorf("unique check: %w", err)
		}
	}
	id, err = s.insertJob(ctx, s.db, p, hash)
	return id, false, err
}

// insertJob is Queue::dispatch's INSERT on ex (the pool, or a transaction
// that writes the job together with what caused it).
func (s *Store) insertJob(ctx context.Context, ex sqlx.ExecerContext, p InsertJob, hash sql.NullString) (int64, error) {
	// Queue::dispatch: cost is never negative.
	group, limit := concurrencyColumns(p.ConcurrencyGroup, p.ConcurrencyLimit)
	cost := max(0, p.CostUnits)
	availableAt := DateTime(s.clock.Now().Add(p.Delay))
	res, err := ex.ExecContext(ctx, s.query(qInsertJob),
		p.Queue, p.Handler, string(p.Payload), hash, p.Priority, p.MaxAttempts, availableAt,
		p.WorkflowID, p.StepIndex, p.DependsOn, p.BatchID, group, limit, cost,
		sql.NullString{String: p.SessionID, Valid: p.SessionID != ""}, nullBytes(p.WorkerSession))
	if err != nil {
		return 0, fmt.Errorf("insert job: %w", err)
	}
	return res.LastInsertId()
}

// insertLogs writes log rows with one multi-row INSERT. Rows without error
// or context columns (started, completed, retried: the hot path) use the
// narrower statement, which the server parses markedly faster.
func (s *Store) insertLogs(ctx context.Context, ex sqlx.ExecerContext, logs []LogRow) error {
	if len(logs) == 0 {
		return nil
	}
	wide := false
	for i := range logs {
		l := &logs[i]
		if l.ErrorMessage.Valid || l.ErrorClass.Valid || l.ErrorTrace.Valid || l.Context.Valid {
			wide = true
			break
		}
	}
	name, tuple, cols := qInsertLogsNarrow, " (?,?,?,?,?,?,?,?,?)", 9
	if wide {
		name, tuple, cols = qInsertLogs, " (?,?,?,?,?,?,?,?,?,?,?,?,?)", 13
	}
	var b strings.Builder
	b.Grow(len(s.query(name)) + len(logs)*(len(tuple)+1))
	b.WriteString(s.query(name))
	args := make([]any, 0, len(logs)*cols)
	for i := range logs {
		l := &logs[i]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tuple)
		args = append(args, l.JobID, l.WorkflowID, l.StepIndex, l.Handler, l.Queue, l.Event, l.Attempt, l.DurationMS, l.MemoryPeakKB)
		if wide {
			// Cut to the columns' sizes: a refused log row would lose the
			// transition it is written with.
			args = append(args, fitNull(l.ErrorMessage, FitText), fitNull(l.ErrorClass, fitClass),
				fitNull(l.ErrorTrace, FitText), l.Context)
		}
	}
	if _, err := ex.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("insert logs: %w", err)
	}
	return nil
}

// InsertLogs writes log rows outside any job transition.
func (s *Store) InsertLogs(ctx context.Context, logs []LogRow) error {
	return s.insertLogs(ctx, s.db, logs)
}

// Attempt names one claimed attempt of a job: the fence every transition of
// a claimed row checks.
type Attempt struct {
	ID       int64
	Attempt  int
	WorkerID string
}

type attemptRow struct {
	ID         int64          `db:"id"`
	Status     string         `db:"status"`
	Attempts   int            `db:"attempts"`
	ReservedBy sql.NullString `db:"reserved_by"`
}

func (a attemptRow) heldBy(at Attempt) bool {
	return a.Attempts == at.Attempt && a.ReservedBy.Valid && a.ReservedBy.String == at.WorkerID
}

// lockAttempts locks the rows and returns them by id. tx is inFencedTx's.
func (s *Store) lockAttempts(ctx context.Context, tx *sqlx.Tx, ids []int64) (map[int64]attemptRow, error) {
	q, args, err := s.in(qLockAttempts, ids)
	if err != nil {
		return nil, err
	}
	// Causal on a cluster because tx began in inFencedTx (a wait inside
	// the transaction would be skipped).
	var rows []attemptRow
	if err := tx.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("lock attempts: %w", err)
	}
	m := make(map[int64]attemptRow, len(rows))
	for _, r := range rows {
		m[r.ID] = r
	}
	return m, nil
}

// Completion is a successful attempt and its `completed` log row.
type Completion struct {
	Attempt
	Log LogRow
}

// CompleteResult says what happened to each completion of a batch.
type CompleteResult struct {
	Completed []int64 // marked completed now, log written
	Already   []int64 // this attempt had already completed it (a retried batch)
	Refused   []int64 // the attempt no longer holds the row: nothing changed
}

// CompleteJobs marks a batch of attempts completed and writes their log rows
// in one transaction. An attempt that lost its row (rescued, re-claimed,
// deleted) is refused and changes nothing.
//
// The usual batch, every attempt still holding its row, takes one fenced
// UPDATE (the fence in its WHERE) and the log INSERT; only when the UPDATE
// finds fewer rows than the batch is it undone and each row read under
// lock to tell which attempts were refused.
func (s *Store) CompleteJobs(ctx context.Context, batch []Completion) (CompleteResult, error) {
	var res CompleteResult
	if len(batch) == 0 {
		return res, nil
	}
	if res, ok, err := s.completeHeld(ctx, batch); err != nil || ok {
		return res, err
	}
	ids := make([]int64, len(batch))
	for i, c := range batch {
		ids[i] = c.ID
	}
	err := s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		res = CompleteResult{}
		held, err := s.lockAttempts(ctx, tx, ids)
		if err != nil {
			return err
		}
		var done []int64
		var logs []LogRow
		for _, c := range batch {
			row, ok := held[c.ID]
			switch {
			case ok && row.heldBy(c.Attempt) && row.Status == StatusProcessing:
				done = append(done, c.ID)
				logs = append(logs, c.Log)
			case ok && row.heldBy(c.Attempt) && row.Status == StatusCompleted:
				res.Already = append(res.Already, c.ID)
			default:
				res.Refused = append(res.Refused, c.ID)
			}
		}
		if len(done) == 0 {
			return nil
		}
		q, args, err := s.in(qCompleteJobs, done)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		res.Completed = done
		return s.insertLogs(ctx, tx, logs)
	})
	return res, err
}

// completeHeld is CompleteJobs' fast path: ok is false, with nothing
// changed, when some attempt of the batch no longer holds its row (or the
// batch mixes workers), and the caller takes the careful path.
func (s *Store) completeHeld(ctx context.Context, batch []Completion) (res CompleteResult, ok bool, err error) {
	q, args, ids, logs, ok := s.completeHeldQuery(batch)
	if !ok {
		return res, false, nil
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		r, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || int(n) != len(batch) {
			return cmp.Or(err, errNotAllHeld)
		}
		return s.insertLogs(ctx, tx, logs)
	})
	if errors.Is(err, errNotAllHeld) {
		return res, false, nil
	}
	if err != nil {
		return res, false, err
	}
	return CompleteResult{Completed: ids}, true, nil
}

// completeHeldQuery builds the fenced UPDATE of a batch whose attempts all
// belong to one worker and name distinct jobs; ok is false otherwise.
func (s *Store) completeHeldQuery(batch []Completion) (q string, args []any, ids []int64, logs []LogRow, ok bool) {
	byAttempt := map[int][]int64{}
	ids = make([]int64, 0, len(batch))
	logs = make([]LogRow, 0, len(batch))
	for _, c := range batch {
		if c.WorkerID != batch[0].WorkerID {
			return "", nil, nil, nil, false
		}
		byAttempt[c.Attempt.Attempt] = append(byAttempt[c.Attempt.Attempt], c.ID)
		ids = append(ids, c.ID)
		logs = append(logs, c.Log)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		return "", nil, nil, nil, false // a job twice in one batch: the careful path sorts it out
	}
	var fence []string
	args = []any{batch[0].WorkerID}
	for attempt, group := range byAttempt {
		where, wargs := idRanges(group)
		fence = append(fence, "(attempts = ? AND ("+where+"))")
		args = append(append(args, attempt), wargs...)
	}
	q = strings.Replace(s.query(qCompleteHeldJobs), "/*fence*/", strings.Join(fence, " OR "), 1)
	return q, args, ids, logs, true
}

// errNotAllHeld rolls completeHeld's transaction back: some attempt of the
// batch no longer holds its row (or already completed it), and the careful
// path tells each case apart.
var errNotAllHeld = errors.New("not every attempt of the batch holds its row")

// Failure is a failed attempt: retried after Delay, or buried.
type Failure struct {
	Attempt
	Bury         bool
	Delay        time.Duration
	ErrorMessage string
	// Logs are written with the transition: `failed, retried` or `buried`.
	Logs []LogRow
}

// FailJob retries or buries one attempt, fenced like CompleteJobs. It
// returns false when the attempt no longer holds the row.
func (s *Store) FailJob(ctx context.Context, f Failure) (bool, error) {
	applied := false
	err := s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		applied, err = s.failIn(ctx, tx, f)
		return err
	})
	return applied, err
}

// failIn is FailJob inside the caller's transaction.
func (s *Store) failIn(ctx context.Context, tx *sqlx.Tx, f Failure) (bool, error) {
	held, err := s.lockAttempts(ctx, tx, []int64{f.ID})
	if err != nil {
		return false, err
	}
	row, ok := held[f.ID]
	if !ok || !row.heldBy(f.Attempt) || row.Status != StatusProcessing {
		return false, nil
	}
	if f.Bury {
		_, err = tx.ExecContext(ctx, s.query(qBuryJob), FitText(f.ErrorMessage), f.ID)
	} else {
		_, err = tx.ExecContext(ctx, s.query(qRetryJob), DateTime(s.clock.Now().Add(f.Delay)), f.ID)
	}
	if err != nil {
		return false, fmt.Errorf("fail job %d: %w", f.ID, err)
	}
	return true, s.insertLogs(ctx, tx, f.Logs)
}

// UnclaimJobs hands attempts back to pending with the attempt restored
// (Queue::unclaim) and removes their `started` rows, as if they had never
// been claimed. Only attempts that still hold their rows are touched; it
// returns how many it gave back.
func (s *Store) UnclaimJobs(ctx context.Context, attempts []Attempt) (int, error) {
	if len(attempts) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(attempts))
	for i, a := range attempts {
		ids[i] = a.ID
	}
	n := 0
	err := s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		n = 0
		held, err := s.lockAttempts(ctx, tx, ids)
		if err != nil {
			return err
		}
		var give []int64
		var gone []Attempt
		for _, a := range attempts {
			if row, ok := held[a.ID]; ok && row.heldBy(a) && row.Status == StatusProcessing {
				give = append(give, a.ID)
				gone = append(gone, a)
			}
		}
		if len(give) == 0 {
			return nil
		}
		q, args, err := s.in(qUnclaimJobs, give)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("unclaim: %w", err)
		}
		for _, a := range gone {
			if _, err := tx.ExecContext(ctx, s.query(qDeleteStartedLog), a.ID, a.Attempt); err != nil {
				return fmt.Errorf("unclaim log: %w", err)
			}
		}
		n = len(give)
		return nil
	})
	return n, err
}

// Heartbeat is Heartbeat::beat for one attempt: reserved_at=NOW(), and the
// progress JSON when given. False means the attempt no longer holds the row.
func (s *Store) Heartbeat(ctx context.Context, a Attempt, progress []byte) (bool, error) {
	var res sql.Result
	var err error
	if progress == nil {
		res, err = s.db.ExecContext(ctx, s.query(qHeartbeat), a.ID, a.WorkerID, a.Attempt)
	} else {
		res, err = s.db.ExecContext(ctx, s.query(qHeartbeatProgress), string(progress), a.ID, a.WorkerID, a.Attempt)
	}
	if err != nil {
		return false, fmt.Errorf("heartbeat job %d: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	// RowsAffected is 0 also when reserved_at already equals NOW() (same
	// second), so check that this very attempt still holds the row.
	return s.attemptHeld(ctx, a)
}

// attemptHeld reports whether the attempt still holds its job (processing,
// reserved by its worker, at its attempt number).
func (s *Store) attemptHeld(ctx context.Context, a Attempt) (bool, error) {
	var held int
	// Causal on a cluster, as every read whose "no" writes nothing (see
	// inFencedTx): a job wrongly found lost is cancelled, its row left
	// processing.
	if err := s.db.GetContext(ctx, &held, s.causal(s.query(qAttemptHeld)), a.ID, a.WorkerID, a.Attempt); err != nil {
		return false, fmt.Errorf("job %d attempt %d: %w", a.ID, a.Attempt, err)
	}
	return held == 1, nil
}

// TouchJobs refreshes reserved_at of every attempt a worker holds and
// returns the ids it no longer holds.
func (s *Store) TouchJobs(ctx context.Context, workerID string, ids []int64) (lost []int64, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := s.in(qTouchJobs, ids, workerID)
	if err != nil {
		return nil, err
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("touch jobs: %w", err)
	}
	if n, _ := res.RowsAffected(); int(n) == len(ids) {
		return nil, nil
	}
	return s.lostOf(ctx, workerID, ids)
}

func (s *Store) lostOf(ctx context.Context, workerID string, ids []int64) ([]int64, error) {
	q, args, err := s.in(qOwnedJobs, ids, workerID)
	if err != nil {
		return nil, err
	}
	var owned []int64
	// Causal on a cluster, like attemptHeld.
	if err := s.db.SelectContext(ctx, &owned, s.causal(q), args...); err != nil {
		return nil, fmt.Errorf("owned jobs: %w", err)
	}
	have := make(map[int64]bool, len(owned))
	for _, id := range owned {
		have[id] = true
	}
	var lost []int64
	for _, id := range ids {
		if !have[id] {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// StaleDecision is what a sweeper does with one stale row.
type StaleDecision struct {
	Bury  bool
	Delay time.Duration
}

// StaleFutureTolerance is how far in the future a processing row's
// reserved_at may be before the stale sweep takes it at once: further than
// any time-zone offset (14 h) between a writer's session and ours, so a
// live reservation is never taken, while a row reserved in 2099 by a hand
// edit or a broken tool is rescued instead of waiting until then.
const StaleFutureTolerance = 24 * time.Hour

// StaleMessage is the error Queuety buries a stale job with.
const StaleMessage = "Stale: worker died without completing."

// RecoverStale is Worker::recover_stale: every processing row whose
// reserved_at (available_at when reserved_at is NULL) is older than cutoff
// is retried after decide's delay or buried with StaleMessage, with
// Queuety's log rows (`retried` with the attempt; `buried` with the message
// and no attempt). Rows are locked with SKIP LOCKED, so concurrent
// sweepers never double-handle a row.
func (s *Store) RecoverStale(ctx context.Context, cutoff time.Time, limit int, decide func(*JobRow) StaleDecision) (retried, buried int, err error) {
	r, b, err := s.RecoverStaleRows(ctx, cutoff, limit, decide)
	return r, len(b), err
}

// RecoverStaleRows is RecoverStale returning the rows it buried, for what
// a burial does beyond the row (a state machine's fail_action).
func (s *Store) RecoverStaleRows(ctx context.Context, cutoff time.Time, limit int, decide func(*JobRow) StaleDecision) (retried int, buried []JobRow, err error) {
	return s.recoverStale(ctx, qFindStale, cutoff, limit, func(j *JobRow) StaleStepDecision {
		d := decide(j)
		return StaleStepDecision{Bury: d.Bury, Delay: d.Delay}
	})
}

// recoverStale is the sweep shared by plain jobs and workflow steps: rows
// found by the named query are retried or buried in one transaction, with
// Queuety's log rows (`retried` with the attempt; `buried` with the message
// and no attempt), and the buried rows are returned.
func (s *Store) recoverStale(ctx context.Context, find string, cutoff time.Time, limit int, decide func(*JobRow) StaleStepDecision) (retried int, buried []JobRow, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		retried, buried = 0, nil
		var rows []JobRow
		c := DateTime(cutoff) // reserved_at, or available_at when reserved_at is NULL
		future := DateTime(s.clock.Now().Add(StaleFutureTolerance))
		if err := tx.SelectContext(ctx, &rows, s.query(find), c, c, future, limit); err != nil {
			return fmt.Errorf("find stale: %w", err)
		}
		var logs []LogRow
		for i := range rows {
			j := &rows[i]
			d := decide(j)
			if d.Leave {
				continue
			}
			if d.Bury {
				q := qBuryJob
				args := []any{StaleMessage, j.ID}
				if d.KeepRow {
					q, args = qLcTouchStaleStep, []any{j.ID}
				}
				if _, err := tx.ExecContext(ctx, s.query(q), args...); err != nil {
					return fmt.Errorf("bury stale %d: %w", j.ID, err)
				}
				l := LogFor(j, EventBuried)
				l.ErrorMessage = String(StaleMessage)
				logs = append(logs, l)
				buried = append(buried, *j)
				continue
			}
			if _, err := tx.ExecContext(ctx, s.query(qRetryJob), DateTime(s.clock.Now().Add(d.Delay)), j.ID); err != nil {
				return fmt.Errorf("retry stale %d: %w", j.ID, err)
			}
			l := LogFor(j, EventRetried)
			l.Attempt = Int(int64(j.Attempts))
			logs = append(logs, l)
			retried++
		}
		return s.insertLogs(ctx, tx, logs)
	})
	return retried, buried, err
}

// PauseQueue marks a queue paused (queue_states row), as Queue::pause_queue.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	_, err := s.db.ExecContext(ctx, s.query(qPauseQueue), queue)
	return err
}

// ResumeQueue deletes the queue's pause row.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	_, err := s.db.ExecContext(ctx, s.query(qResumeQueue), queue)
	return err
}

// PausedQueues lists paused queues by name.
func (s *Store) PausedQueues(ctx context.Context) ([]string, error) {
	var qs []string
	err := s.db.SelectContext(ctx, &qs, s.query(qPausedQueues))
	return qs, err
}

// QueueStats counts jobs by status for one queue; every status is present.
type QueueStats struct {
	Queue  string         `json:"queue"`
	Counts map[string]int `json:"counts"`
	Paused bool           `json:"paused"`
	// NeedsAttention lists, by kind, the queue's rows that can never run
	// as they are (filled by the status report, not by Stats; omitted
	// when there are none).
	NeedsAttention []Attention `json:"needs_attention,omitempty"`
	// Unclaimed lists the pending jobs no live queuety worker runs, by
	// handler (filled by the status report; fleet.go).
	Unclaimed []Unclaimed `json:"unclaimed,omitempty"`
}

// Stats returns per-queue counts by status, paused queues included even
// when they hold no jobs.
func (s *Store) Stats(ctx context.Context) ([]QueueStats, error) {
	var rows []struct {
		Queue  string `db:"queue"`
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.query(qStats)); err != nil {
		return nil, err
	}
	paused, err := s.PausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	var out []QueueStats
	idx := map[string]int{}
	get := func(q string) *QueueStats {
		i, ok := idx[q]
		if !ok {
			c := make(map[string]int, len(Statuses))
			for _, st := range Statuses {
				c[st] = 0
			}
			out = append(out, QueueStats{Queue: q, Counts: c})
			i = len(out) - 1
			idx[q] = i
		}
		return &out[i]
	}
	for _, r := range rows {
		get(r.Queue).Counts[r.Status] += r.N
	}
	for _, q := range paused {
		get(q).Paused = true
	}
	return out, nil
}

// PendingHandler is a count of pending jobs of one handler and kind.
type PendingHandler struct {
	Handler string `db:"handler"`
	IsStep  bool   `db:"is_step"`
	N       int    `db:"n"`
}

// PendingHandlers counts the pending jobs (at most 20,000 read) of queues
// by handler, workflow steps apart, largest first.
func (s *Store) PendingHandlers(ctx context.Context, queues []string) ([]PendingHandler, error) {
	q, args, err := s.in(qPendingHandlers, queues)
	if err != nil {
		return nil, err
	}
	var out []PendingHandler
	if err := s.db.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("pending handlers: %w", err)
	}
	return out, nil
}

// ListFilter narrows ListJobs; empty fields match everything.
type ListFilter struct {
	Queue, Status, Handler string
	Limit                  int
}

// ListJobs returns the newest jobs first (Queuety's `list`).
func (s *Store) ListJobs(ctx context.Context, f ListFilter) ([]JobRow, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var rows []JobRow
	err := s.unsafe.SelectContext(ctx, &rows, s.query(qListJobs),
		f.Queue, f.Queue, f.Status, f.Status, f.Handler, f.Handler, f.Limit)
	return rows, err
}

// GetJob reads one job, or ErrJobNotFound.
func (s *Store) GetJob(ctx context.Context, id int64) (*JobRow, error) {
	var j JobRow
	err := s.unsafe.GetContext(ctx, &j, s.query(qGetJob), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job #%d: %w", id, ErrJobNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// JobLogs returns a job's log rows, oldest first.
func (s *Store) JobLogs(ctx context.Context, id int64) ([]LogRow, error) {
	var rows []LogRow
	err := s.unsafe.SelectContext(ctx, &rows, s.query(qJobLogs), id)
	return rows, err
}

// RetryJob is Queue::retry(id, 0) as the CLI's `retry` runs it: pending now,
// from any status, attempts kept.
func (s *Store) RetryJob(ctx context.Context, id int64) error {
	return s.byID(ctx, id, qRetryJobByHand, DateTime(s.clock.Now()), id)
}

// RetryBuried retries every buried job (of one queue, if given).
func (s *Store) RetryBuried(ctx context.Context, queue string) (int, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qBuriedIDs), queue, queue); err != nil {
		return 0, err
	}
	return s.RetryBuriedIDs(ctx, ids)
}

// BuryJob buries a job by hand with the given message.
func (s *Store) BuryJob(ctx context.Context, id int64, message string) error {
	return s.byID(ctx, id, qBuryJobByHand, FitText(message), id)
}

// DeleteJob deletes a job row; its log rows stay, as in Queuety.
func (s *Store) DeleteJob(ctx context.Context, id int64) error {
	return s.byID(ctx, id, qDeleteJob, id)
}

func (s *Store) byID(ctx context.Context, id int64, name string, args ...any) error {
	res, err := s.db.ExecContext(ctx, s.query(name), args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.GetJob(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// CountBuried counts the buried jobs (of queue, if not empty) RetryBuried
// would retry.
func (s *Store) CountBuried(ctx context.Context, queue string) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.query(qCountBuried), queue, queue)
	return n, err
}

// CountPurgeable counts the completed jobs PurgeCompleted(cutoff) would
// delete.
func (s *Store) CountPurgeable(ctx context.Context, cutoff time.Time) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.query(qCountPurgeable), DateTime(cutoff))
	return n, err
}

// PurgeCompleted deletes completed jobs whose completed_at is before cutoff.
func (s *Store) PurgeCompleted(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		res, err := s.db.ExecContext(ctx, s.query(qPurgeCompleted), DateTime(cutoff))
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += int(n)
		if n < 5000 {
			return total, nil
		}
	}
}

// InsertJobs is Queue::batch: one multi-row INSERT per 1000 jobs of queue,
// handler, payload, priority, status, max_attempts and available_at (no
// unique check, no dependencies). It returns how many rows it wrote.
func (s *Store) InsertJobs(ctx context.Context, jobs []InsertJob) (int, error) {
	total := 0
	for len(jobs) > 0 {
		n := min(len(jobs), 1000)
		var b strings.Builder
		b.WriteString(s.query(qInsertJobsBulk))
		args := make([]any, 0, n*7)
		for i, p := range jobs[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(" (?,?,?,?,'pending',?,?)")
			args = append(args, p.Queue, p.Handler, string(p.Payload), p.Priority, p.MaxAttempts, DateTime(s.clock.Now().Add(p.Delay)))
		}
		if _, err := s.db.ExecContext(ctx, b.String(), args...); err != nil {
			return total, fmt.Errorf("insert jobs: %w", err)
		}
		total += n
		jobs = jobs[n:]
	}
	return total, nil
}

// TruncateJobsAndLogs empties the jobs and logs tables (benchmarks only).
func (s *Store) TruncateJobsAndLogs(ctx context.Context) error {
	for _, q := range []string{qTruncateJobs, qTruncateLogs} {
		if _, err := s.db.ExecContext(ctx, s.query(q)); err != nil {
			return err
		}
	}
	return nil
}

// CountLogEvents counts log rows of one event.
func (s *Store) CountLogEvents(ctx context.Context, event string) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.query(qCountLogEvents), event)
	return n, err
}

// concurrencyColumns are a job's concurrency_group and concurrency_limit
// columns under Queue::dispatch's rule (phpjson.ConcurrencyGroup).
func concurrencyColumns(group string, limit int) (sql.NullString, sql.NullInt64) {
	g, l := phpjson.ConcurrencyGroup(group, limit)
	if g == "" {
		return sql.NullString{}, sql.NullInt64{}
	}
	return String(g), Int(int64(l))
}
