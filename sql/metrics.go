package store

import (
	"context"
	"database/sql"
	"time"
)

// MetricsSnapshot is what GET /metrics reads from the tables: counts by
// indexed columns only, so its cost stays bounded on a large jobs table.
type MetricsSnapshot struct {
	Jobs           []MetricsJobCount  // pending, processing, failed and buried, by queue
	Completed      float64            // completed jobs of every queue
	OldestPending  map[string]float64 // queue → seconds the oldest runnable pending job has waited
	Waiting        []MetricsWaitingCount
	Paused         []string
	Workflows      map[string]float64 // status → count
	WorkerSessions map[string]float64 // status → count
	Activities     []MetricsActivityCount
}

// MetricsJobCount is the number of jobs of one queue in one status.
type MetricsJobCount struct {
	Queue  string  `db:"queue"`
	Status string  `db:"status"`
	N      float64 `db:"n"`
}

// MetricsWaitingCount is the number of due pending jobs of one queue that
// cannot run yet, by what they wait on (dependency, workflow).
type MetricsWaitingCount struct {
	Queue  string  `db:"queue"`
	Reason string  `db:"reason"`
	N      float64 `db:"n"`
}

// MetricsFleet is who works the queues: live registrations by runtime and
// the queues where the plugin's PHP workers (which do not register) ran
// jobs lately.
type MetricsFleet struct {
	Workers []MetricsWorker
	PHPSeen []string
}

// MetricsWorker is one live registration: its runtime (go, external) and
// queues.
type MetricsWorker struct {
	Runtime string     `db:"runtime"`
	Queues  StringList `db:"queues"`
}

// MetricsFleet reads the registrations heartbeated since liveSince and the
// queues where a PHP worker ran a job since phpSince.
func (s *Store) MetricsFleet(ctx context.Context, liveSince, phpSince time.Time) (MetricsFleet, error) {
	var f MetricsFleet
	if err := s.db.SelectContext(ctx, &f.Workers, s.query(qMetricsLiveWorkers), DateTime(liveSince)); err != nil {
		return f, err
	}
	var err error
	f.PHPSeen, err = s.PHPSeenQueues(ctx, phpSince)
	return f, err
}

// MetricsActivityCount is the number of activity executions of one mode
// in one state.
type MetricsActivityCount struct {
	Mode   string  `db:"mode"`
	Status string  `db:"status"`
	N      float64 `db:"n"`
}

// MetricsSnapshot reads the gauges of GET /metrics.
func (s *Store) MetricsSnapshot(ctx context.Context) (MetricsSnapshot, error) {
	var m MetricsSnapshot
	if err := s.db.SelectContext(ctx, &m.Jobs, s.query(qMetricsJobs)); err != nil {
		return m, err
	}
	if err := s.db.GetContext(ctx, &m.Completed, s.query(qMetricsJobsCompleted)); err != nil {
		return m, err
	}
	// The oldest runnable age per queue with pending jobs: one short read
	// each (the queue label is capped by the caller's exposition).
	m.OldestPending = map[string]float64{}
	for _, j := range m.Jobs {
		if j.Status != "pending" {
			continue
		}
		var age sql.NullFloat64
		err := s.db.GetContext(ctx, &age, s.query(qMetricsOldestRunnable), j.Queue)
		if err != nil && err != sql.ErrNoRows {
			return m, err
		}
		if age.Valid {
			m.OldestPending[j.Queue] = age.Float64
		}
	}
	if err := s.db.SelectContext(ctx, &m.Waiting, s.query(qMetricsJobsWaiting)); err != nil {
		return m, err
	}
	paused, err := s.PausedQueues(ctx)
	if err != nil {
		return m, err
	}
	m.Paused = paused
	if m.Workflows, err = s.statusCounts(ctx, qMetricsWorkflows); err != nil {
		return m, err
	}
	if m.WorkerSessions, err = s.statusCounts(ctx, qMetricsWorkerSessions); err != nil {
		return m, err
	}
	if err := s.db.SelectContext(ctx, &m.Activities, s.query(qMetricsActivities)); err != nil {
		return m, err
	}
	return m, nil
}

func (s *Store) statusCounts(ctx context.Context, name string) (map[string]float64, error) {
	var rows []struct {
		Status string  `db:"status"`
		N      float64 `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.query(name)); err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// LogHead is the newest log row's id (0: none).
func (s *Store) LogHead(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.GetContext(ctx, &id, s.query(qMetricsLogHead))
	return id, err
}

// QueueCount is a count of one queue.
type QueueCount struct {
	Queue string  `db:"queue"`
	N     float64 `db:"n"`
}

// LogCompletions counts the completed log rows with after < id <= upTo,
// by queue.
func (s *Store) LogCompletions(ctx context.Context, after, upTo int64) ([]QueueCount, error) {
	var out []QueueCount
	if upTo <= after {
		return out, nil
	}
	err := s.db.SelectContext(ctx, &out, s.query(qMetricsLogCompletions), after, upTo)
	return out, err
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }
