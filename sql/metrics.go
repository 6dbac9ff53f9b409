package store

import "context"

// MetricsSnapshot is what GET /metrics reads from the tables: counts by
// indexed columns only, so its cost stays bounded on a large jobs table.
type MetricsSnapshot struct {
	Jobs           []MetricsJobCount  // pending, processing, failed and buried, by queue
	Completed      float64            // completed jobs of every queue
	OldestPending  map[string]float64 // queue → seconds the oldest runnable pending job has waited
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
	var ages []struct {
		Queue string  `db:"queue"`
		Age   float64 `db:"age"`
	}
	if err := s.db.SelectContext(ctx, &ages, s.query(qMetricsOldestPending)); err != nil {
		return m, err
	}
	m.OldestPending = make(map[string]float64, len(ages))
	for _, a := range ages {
		m.OldestPending[a.Queue] = a.Age
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

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }
