package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"math"
	"time"
)

// LogEvents lists the values of logs.event (the column's ENUM).
var LogEvents = []string{
	"started", "completed", "failed", "buried", "retried", "workflow_started", "workflow_completed",
	"workflow_failed", "workflow_paused", "workflow_resumed", "workflow_cancelled", "workflow_rewound",
	"workflow_forked", "workflow_deadline_exceeded", "debug",
}

// LogFilter selects log rows as Queuety::query_logs does. The first filter
// set among JobID, WorkflowID, Handler, Event and Since picks the query and
// its order (job, workflow, since: oldest first; handler, event: newest
// first); unlike the plugin, which ignores the others, the rest narrow it.
// With none set, the rows of the last 24 hours are read.
type LogFilter struct {
	JobID      sql.NullInt64
	WorkflowID sql.NullInt64
	Handler    sql.NullString
	Event      sql.NullString
	Since      sql.NullTime
	// Limit caps the rows (0: none; the plugin puts none on job and
	// workflow reads and 50 on the others).
	Limit int
}

// QueryLogs returns the log rows of f.
func (s *Store) QueryLogs(ctx context.Context, f LogFilter) ([]LogRow, error) {
	limit := int64(math.MaxInt64)
	if f.Limit > 0 {
		limit = int64(f.Limit)
	}
	var name string
	var first any
	// The filter that picked the query is left out of the rest.
	rest := f
	switch {
	case f.JobID.Valid:
		name, first, rest.JobID = qLogsByJob, f.JobID.Int64, sql.NullInt64{}
	case f.WorkflowID.Valid:
		name, first, rest.WorkflowID = qLogsByWorkflow, f.WorkflowID.Int64, sql.NullInt64{}
	case f.Handler.Valid:
		name, first, rest.Handler = qLogsByHandler, f.Handler.String, sql.NullString{}
	case f.Event.Valid:
		name, first, rest.Event = qLogsByEvent, f.Event.String, sql.NullString{}
	case f.Since.Valid:
		name, first, rest.Since = qLogsSince, DateTime(f.Since.Time), sql.NullTime{}
	default:
		name, first = qLogsSince, DateTime(s.clock.Now().Add(-24*time.Hour))
	}
	var since any
	if rest.Since.Valid {
		since = DateTime(rest.Since.Time)
	}
	args := []any{first,
		nullable(rest.JobID), nullable(rest.JobID),
		nullable(rest.WorkflowID), nullable(rest.WorkflowID),
		nullable(rest.Handler), nullable(rest.Handler),
		nullable(rest.Event), nullable(rest.Event),
		since, since,
		limit}
	rows := []LogRow{}
	err := s.unsafe.SelectContext(ctx, &rows, s.query(name), args...)
	return rows, err
}

// nullable is a filter's argument: nil when it is not set.
func nullable(v driver.Valuer) any {
	x, _ := v.Value()
	return x
}

// HandlerStats is one handler's line of Metrics::handler_stats.
type HandlerStats struct {
	Handler   string  `json:"handler"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"` // failed and buried log rows
	AvgMS     float64 `json:"avg_ms"`
	P95MS     float64 `json:"p95_ms"`
	ErrorRate float64 `json:"error_rate"`
}

// HandlerStats computes Metrics::handler_stats over the log rows written
// since since: per handler (in the order the grouped read returns them),
// completed and failed+buried counts, the mean duration of completions
// rounded to 2 places, their 95th percentile (the value at rank
// ceil(0.95 n) - 1 of the timed ones) and failed / (completed + failed)
// rounded to 4 places.
func (s *Store) HandlerStats(ctx context.Context, since time.Time) ([]HandlerStats, error) {
	var groups []struct {
		Handler string          `db:"handler"`
		Event   string          `db:"event"`
		Count   int             `db:"cnt"`
		AvgMS   sql.NullFloat64 `db:"avg_ms"`
	}
	cutoff := DateTime(since)
	if err := s.db.SelectContext(ctx, &groups, s.query(qLogsHandlerStats), cutoff); err != nil {
		return nil, err
	}
	out := []HandlerStats{}
	index := map[string]int{}
	for _, g := range groups {
		i, ok := index[g.Handler]
		if !ok {
			i = len(out)
			index[g.Handler] = i
			out = append(out, HandlerStats{Handler: g.Handler})
		}
		switch g.Event {
		case EventCompleted:
			out[i].Completed = g.Count
			out[i].AvgMS = round(g.AvgMS.Float64, 2)
		case EventFailed, EventBuried:
			out[i].Failed += g.Count
		}
	}
	for i := range out {
		h := &out[i]
		if total := h.Completed + h.Failed; total > 0 {
			h.ErrorRate = round(float64(h.Failed)/float64(total), 4)
		}
		p95, err := s.p95(ctx, cutoff, h.Handler)
		if err != nil {
			return nil, err
		}
		h.P95MS = p95
	}
	return out, nil
}

// p95 is Metrics::p95_duration of one handler.
func (s *Store) p95(ctx context.Context, cutoff, handler string) (float64, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(qLogsP95Count), cutoff, handler); err != nil || n == 0 {
		return 0, err
	}
	at := max(0, min(int(math.Ceil(0.95*float64(n)))-1, n-1))
	var d sql.NullFloat64
	err := s.db.GetContext(ctx, &d, s.query(qLogsP95Pick), cutoff, handler, at)
	if err == sql.ErrNoRows {
		return 0, nil // deleted between the two reads
	}
	return d.Float64, err
}

// round is PHP's round($x, places): half away from zero.
func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
