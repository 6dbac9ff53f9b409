package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// BuriedRow is one buried job as the overview groups it.
type BuriedRow struct {
	ID      int64  `db:"id"`
	Handler string `db:"handler"`
	Error   string `db:"error"`
	// Class is the error class of the job's newest log row that has one
	// ("" when none does).
	Class string `db:"error_class"`
}

// BuriedScan reads the newest scan buried jobs, newest first, with their
// error class.
func (s *Store) BuriedScan(ctx context.Context, scan int) ([]BuriedRow, error) {
	var out []BuriedRow
	if err := s.db.SelectContext(ctx, &out, s.query(qDashBuriedScan), scan); err != nil {
		return nil, fmt.Errorf("buried jobs: %w", err)
	}
	return out, nil
}

// RetryBuriedIDs puts the listed jobs that are still buried back to
// pending now (as RetryBuried does), returning how many moved.
func (s *Store) RetryBuriedIDs(ctx context.Context, ids []int64) (int, error) {
	total := 0
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		q, args, err := s.in(qRetryBuried, DateTime(s.clock.Now()), ids[:n])
		if err != nil {
			return total, err
		}
		res, err := s.db.ExecContext(ctx, q, args...)
		if err != nil {
			return total, err
		}
		affected, _ := res.RowsAffected()
		total += int(affected)
		ids = ids[n:]
	}
	return total, nil
}

// CompletedLastHour counts, per queue, the jobs completed within the last
// hour (database clock, which writes completed_at).
func (s *Store) CompletedLastHour(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Queue string `db:"queue"`
		N     int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.query(qDashCompletedLastHour)); err != nil {
		return nil, fmt.Errorf("completed last hour: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Queue] = r.N
	}
	return out, nil
}

// StaleJob is a processing job not heard from since a cutoff.
type StaleJob struct {
	ID         int64          `db:"id"`
	Queue      string         `db:"queue"`
	Handler    string         `db:"handler"`
	ReservedAt sql.NullTime   `db:"reserved_at"`
	ReservedBy sql.NullString `db:"reserved_by"`
	Attempts   int            `db:"attempts"`
	WorkflowID sql.NullInt64  `db:"workflow_id"`
}

// StaleProcessing lists processing jobs reserved before cutoff, oldest
// first, at most limit.
func (s *Store) StaleProcessing(ctx context.Context, cutoff time.Time, limit int) ([]StaleJob, error) {
	var out []StaleJob
	if err := s.db.SelectContext(ctx, &out, s.query(qDashStaleProcessing), DateTime(cutoff), limit); err != nil {
		return nil, fmt.Errorf("stale processing: %w", err)
	}
	return out, nil
}

// Throughput counts the attempts that completed and those that failed
// (retried or buried) in each minute since since, from the log rows every
// worker writes: index 0 is the minute starting at since, minutes entries
// in each.
func (s *Store) Throughput(ctx context.Context, since time.Time, minutes int) (completed, failed []int, err error) {
	var rows []struct {
		M  int  `db:"m"`
		OK bool `db:"ok"`
		N  int  `db:"n"`
	}
	at := DateTime(since)
	if err := s.db.SelectContext(ctx, &rows, s.query(qDashThroughput), at, at); err != nil {
		return nil, nil, fmt.Errorf("throughput: %w", err)
	}
	completed, failed = make([]int, minutes), make([]int, minutes)
	for _, r := range rows {
		if r.M < 0 || r.M >= minutes {
			continue
		}
		if r.OK {
			completed[r.M] += r.N
		} else {
			failed[r.M] += r.N
		}
	}
	return completed, failed, nil
}

// JobQuery is the dashboard's job filter: empty fields match everything;
// Since zero means any time; ErrorText matches part of error_message;
// ID (0 = any) is one job; Text matches part of the handler or of the
// payload (a scan of the rows the other filters leave).
type JobQuery struct {
	Status, Queue, Handler string
	Since                  time.Time
	ErrorText              string
	ID                     int64
	Text                   string
}

func (f JobQuery) args() []any {
	since, like := sinceAndLike(f.Since, f.ErrorText)
	_, text := sinceAndLike(time.Time{}, f.Text)
	return []any{f.Status, f.Status, f.Queue, f.Queue, f.Handler, f.Handler, since, since, like, like,
		f.ID, f.ID, text, text, text}
}

// sinceAndLike turns a time filter into NULL-or-DATETIME and a text
// filter into ”-or-a LIKE pattern matching it literally.
func sinceAndLike(since time.Time, text string) (any, string) {
	var at any
	if !since.IsZero() {
		at = DateTime(since)
	}
	like := ""
	if text != "" {
		like = "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(text) + "%"
	}
	return at, like
}

// QueryJobs returns a page of the jobs f matches, newest first.
func (s *Store) QueryJobs(ctx context.Context, f JobQuery, limit, offset int) ([]JobRow, error) {
	var rows []JobRow
	if err := s.unsafe.SelectContext(ctx, &rows, s.query(qDashListJobs), append(f.args(), limit, offset)...); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return rows, nil
}

// CountJobs counts the jobs f matches, at most upTo.
func (s *Store) CountJobs(ctx context.Context, f JobQuery, upTo int) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(qDashCountJobs), append(f.args(), upTo)...); err != nil {
		return 0, fmt.Errorf("count jobs: %w", err)
	}
	return n, nil
}

// JobIDs lists the ids of the jobs f matches, oldest first, at most limit.
func (s *Store) JobIDs(ctx context.Context, f JobQuery, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qDashJobIDs), append(f.args(), limit)...); err != nil {
		return nil, fmt.Errorf("job ids: %w", err)
	}
	return ids, nil
}

// WorkflowQuery is the dashboard's workflow filter, like JobQuery.
type WorkflowQuery struct {
	Status, Name string
	Since        time.Time
	ErrorText    string
}

func (f WorkflowQuery) args() []any {
	since, like := sinceAndLike(f.Since, f.ErrorText)
	return []any{f.Status, f.Status, f.Name, f.Name, since, since, like, like}
}

// QueryWorkflows returns a page of the workflows f matches, newest first.
func (s *Store) QueryWorkflows(ctx context.Context, f WorkflowQuery, limit, offset int) ([]WorkflowRow, error) {
	var rows []WorkflowRow
	if err := s.unsafe.SelectContext(ctx, &rows, s.query(qDashListWorkflows), append(f.args(), limit, offset)...); err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return rows, nil
}

// CountMatchingWorkflows counts the workflows f matches, at most upTo.
func (s *Store) CountMatchingWorkflows(ctx context.Context, f WorkflowQuery, upTo int) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(qDashCountWorkflows), append(f.args(), upTo)...); err != nil {
		return 0, fmt.Errorf("count workflows: %w", err)
	}
	return n, nil
}

// WorkflowIDs lists the ids of the workflows f matches, oldest first, at
// most limit.
func (s *Store) WorkflowIDs(ctx context.Context, f WorkflowQuery, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qDashWorkflowIDs), append(f.args(), limit)...); err != nil {
		return nil, fmt.Errorf("workflow ids: %w", err)
	}
	return ids, nil
}

// PendingSessionJobs lists pending session-bound jobs (id, queue,
// handler, session_id, worker_session filled), by session, at most limit.
func (s *Store) PendingSessionJobs(ctx context.Context, limit int) ([]JobRow, error) {
	var rows []JobRow
	if err := s.unsafe.SelectContext(ctx, &rows, s.query(qDashPendingSession), limit); err != nil {
		return nil, fmt.Errorf("pending session jobs: %w", err)
	}
	return rows, nil
}

// ListBatches returns the newest batches first, at most limit.
func (s *Store) ListBatches(ctx context.Context, limit int) ([]BatchRow, error) {
	var out []BatchRow
	if err := s.unsafe.SelectContext(ctx, &out, s.query(qDashListBatches), limit); err != nil {
		return nil, fmt.Errorf("batches: %w", err)
	}
	return out, nil
}

// BatchJobs returns the jobs of a batch, oldest first, at most limit.
func (s *Store) BatchJobs(ctx context.Context, batchID int64, limit int) ([]JobRow, error) {
	var out []JobRow
	if err := s.unsafe.SelectContext(ctx, &out, s.query(qDashBatchJobs), batchID, limit); err != nil {
		return nil, fmt.Errorf("batch %d jobs: %w", batchID, err)
	}
	return out, nil
}

// GetSchedule reads schedule id (nil when there is none).
func (s *Store) GetSchedule(ctx context.Context, id int64) (*ScheduleRow, error) {
	var row ScheduleRow
	err := s.db.GetContext(ctx, &row, s.query(qDashScheduleGet), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule %d: %w", id, err)
	}
	return &row, nil
}

// SetScheduleEnabled pauses (false) or resumes (true) schedule id.
func (s *Store) SetScheduleEnabled(ctx context.Context, id int64, enabled bool) error {
	if _, err := s.db.ExecContext(ctx, s.query(qDashScheduleEnabled), enabled, id); err != nil {
		return fmt.Errorf("schedule %d: %w", id, err)
	}
	return nil
}

// RunScheduleNow makes an enabled schedule due at now, so the next tick
// dispatches it once (under its overlap policy).
func (s *Store) RunScheduleNow(ctx context.Context, id int64, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.query(qDashScheduleRunNow), DateTime(now), id); err != nil {
		return fmt.Errorf("schedule %d: %w", id, err)
	}
	return nil
}
