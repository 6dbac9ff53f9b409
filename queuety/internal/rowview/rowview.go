// Package rowview holds the views of storage rows that queuety's API hands
// out (JobInfo, LogEntry, QueueStats, …), and their conversions from the
// rows of sql/, all in one place.
//
// The views are the API's own types, not the storage layer's: a user
// lists jobs without importing a package named store, and sql/ can add,
// rename or retype a column without breaking a user's module. Nullable
// columns are pointers (nil: NULL), as in River's rivertype.
//
// queuety exports each view under an alias (queuety.JobInfo, …). They are
// declared here rather than in queuety because the module's own packages
// hold storage rows that users never see (the dashboard's job listing, the
// CLI's bench) and convert them to the same views: an exported conversion
// in a public package would name a store type, and an internal package
// cannot import queuety.
package rowview

import (
	"database/sql"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// JobInfo is one row of the jobs table, as Client.Job, Jobs and JobsByID
// read it.
type JobInfo struct {
	ID      int64  `json:"id"`
	Queue   string `json:"queue"`
	Handler string `json:"handler"`
	// Payload is the payload column: the JSON bytes PHP or Dispatch wrote.
	Payload     string     `json:"payload"`
	PayloadHash *string    `json:"payload_hash"`
	Priority    int        `json:"priority"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"max_attempts"`
	AvailableAt time.Time  `json:"available_at"`
	ReservedAt  *time.Time `json:"reserved_at"`
	ReservedBy  *string    `json:"reserved_by"`
	CompletedAt *time.Time `json:"completed_at"`
	FailedAt    *time.Time `json:"failed_at"`
	// ErrorMessage is the last failure's message.
	ErrorMessage *string `json:"error_message"`
	// WorkflowID and StepIndex are set on a workflow step's job.
	WorkflowID *int64 `json:"workflow_id"`
	StepIndex  *int64 `json:"step_index"`
	// DependsOn is the job this one waits for.
	DependsOn        *int64  `json:"depends_on"`
	BatchID          *int64  `json:"batch_id"`
	ConcurrencyGroup *string `json:"concurrency_group"`
	ConcurrencyLimit *int64  `json:"concurrency_limit"`
	CostUnits        int64   `json:"cost_units"`
	// HeartbeatData is the last heartbeat's progress, as stored.
	HeartbeatData *string `json:"heartbeat_data"`
	// SessionID and WorkerSession bind the job to a worker session.
	SessionID     *string   `json:"session_id"`
	WorkerSession *string   `json:"worker_session"`
	CreatedAt     time.Time `json:"created_at"`
}

// JobFilter narrows Client.Jobs; empty fields match everything. Limit
// defaults to 50.
type JobFilter struct {
	Queue, Status, Handler string
	Limit                  int
}

// LogEntry is one row of the logs table.
type LogEntry struct {
	ID           int64   `json:"id"`
	JobID        *int64  `json:"job_id"`
	WorkflowID   *int64  `json:"workflow_id"`
	StepIndex    *int64  `json:"step_index"`
	Handler      string  `json:"handler"`
	Queue        string  `json:"queue"`
	Event        string  `json:"event"`
	Attempt      *int64  `json:"attempt"`
	DurationMS   *int64  `json:"duration_ms"`
	MemoryPeakKB *int64  `json:"memory_peak_kb"`
	ErrorMessage *string `json:"error_message"`
	ErrorClass   *string `json:"error_class"`
	ErrorTrace   *string `json:"error_trace"`
	// Context is the row's context column (JSON), as stored.
	Context   *string   `json:"context"`
	CreatedAt time.Time `json:"created_at"`
}

// LogFilter selects log rows (`queuety log`, Queuety::query_logs). The
// first filter set among JobID, WorkflowID, Handler, Event and Since picks
// the query and its order (job, workflow, since: oldest first; handler,
// event: newest first); the rest narrow it. With none set, the rows of the
// last 24 hours are read.
type LogFilter struct {
	JobID      *int64
	WorkflowID *int64
	Handler    *string
	Event      *string
	Since      *time.Time
	// Limit caps the rows (0: none).
	Limit int
}

// HandlerStats is one handler's line of `queuety metrics`
// (Metrics::handler_stats).
type HandlerStats struct {
	Handler   string  `json:"handler"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"` // failed and buried log rows
	AvgMS     float64 `json:"avg_ms"`
	P95MS     float64 `json:"p95_ms"`
	ErrorRate float64 `json:"error_rate"`
}

// QueueStats counts jobs by status for one queue; every status is present.
type QueueStats struct {
	Queue  string         `json:"queue"`
	Counts map[string]int `json:"counts"`
	Paused bool           `json:"paused"`
	// NeedsAttention lists, by kind, the queue's rows that can never run
	// as they are (filled by Client.Status, not by Stats; omitted when
	// there are none).
	NeedsAttention []Attention `json:"needs_attention,omitempty"`
	// Unclaimed lists the pending jobs no live queuety worker runs, by
	// handler (filled by Client.Status).
	Unclaimed []Unclaimed `json:"unclaimed,omitempty"`
}

// Attention is one kind of row that can never run as it is, in one queue:
// how many were found (within the diagnosis's bounds), a few ids, and
// what is wrong with them.
type Attention struct {
	Kind string `json:"kind"`
	// Table is "jobs" or "workflows": what the ids are.
	Table  string  `json:"table"`
	Count  int     `json:"count"`
	IDs    []int64 `json:"ids"`
	Reason string  `json:"reason"`
}

// Unclaimed is a handler whose pending jobs on a queue no live queuety
// worker runs.
type Unclaimed struct {
	Queue   string `json:"-"`
	Handler string `json:"handler"`
	Kind    string `json:"kind"` // job, step or batch
	Jobs    int    `json:"jobs"`
	// PHPSeen: a PHP worker ran a job on the queue lately (PHP workers do
	// not register, so this is the only sign of them).
	PHPSeen bool `json:"php_seen"`
}

// StuckJob is a job that can never run as it is.
type StuckJob struct {
	ID    int64  `json:"id"`
	Queue string `json:"queue"`
	// Kind is the machine-readable reason (dependency_cycle, …).
	Kind string `json:"kind"`
	// Reason says, for an operator, why the job cannot run and what would.
	Reason string `json:"reason"`
}

// StuckScan bounds a diagnosis: Pending is how many of the oldest pending
// jobs are examined (and how many of the jobs with the highest
// depends_on), Workflows how many of the oldest live workflows, Limit how
// many rows of each scan are returned. Zero fields take the defaults
// `status` uses.
type StuckScan struct {
	Pending, Workflows, Limit int
}

// MigrateReport says what Migrate created or added; empty when the
// database was already up to date.
type MigrateReport struct {
	CreatedTables []string `json:"created_tables"`
	AddedColumns  []string `json:"added_columns"`
	AddedIndexes  []string `json:"added_indexes"`
}

// NonNil returns the report with empty lists instead of nil ones, for JSON.
func (r MigrateReport) NonNil() MigrateReport {
	for _, l := range []*[]string{&r.CreatedTables, &r.AddedColumns, &r.AddedIndexes} {
		if *l == nil {
			*l = []string{}
		}
	}
	return r
}

// Changed reports whether Migrate changed anything.
func (r MigrateReport) Changed() bool {
	return len(r.CreatedTables)+len(r.AddedColumns)+len(r.AddedIndexes) > 0
}

// ServerInfo is what the client checked about the database server at Open.
type ServerInfo struct {
	Version     string `json:"version"`
	MariaDB     bool   `json:"mariadb"`
	SkipLocked  bool   `json:"skip_locked"`
	UTCOffsetS  int    `json:"utc_offset_seconds"` // server default NOW() minus UTC
	DescIndexes bool   `json:"desc_indexes"`
}

// ActivityMetrics counts local and queued activities (Client.ActivityMetrics).
type ActivityMetrics struct {
	Local                int64 `json:"local"`
	LocalOpen            int64 `json:"local_open"`
	LocalPending         int64 `json:"local_pending"`
	LocalRunning         int64 `json:"local_running"`
	LocalCompleted       int64 `json:"local_completed"`
	LocalFailed          int64 `json:"local_failed"`
	LocalCancelled       int64 `json:"local_cancelled"`
	LocalAttempts        int64 `json:"local_attempts"`
	LocalFailedAttempts  int64 `json:"local_failed_attempts"`
	QueuedOpen           int64 `json:"queued_open"`
	QueuedPending        int64 `json:"queued_pending"`
	QueuedRunning        int64 `json:"queued_running"`
	QueuedFailedAttempts int64 `json:"queued_failed_attempts"`
	JobsPending          int64 `json:"jobs_pending"`
	JobsRunning          int64 `json:"jobs_running"`
}

// InsertRow is every column a dispatch writes (queuety.DispatchRow).
type InsertRow struct {
	Queue   string
	Handler string
	// Payload is the payload's exact stored bytes.
	Payload          []byte
	Priority         int
	Delay            time.Duration
	MaxAttempts      int
	Unique           bool
	WorkflowID       *int64
	StepIndex        *int64
	DependsOn        *int64
	BatchID          *int64
	ConcurrencyGroup string
	ConcurrencyLimit int
	CostUnits        int
	// SessionID and WorkerSession bind the job to a worker session (the
	// normalized options as PHP-encoded JSON); empty for an ordinary job.
	SessionID     string
	WorkerSession []byte
}

// Conversions from the storage layer's rows: the only place that knows
// both sides.

// Job is the view of a jobs row.
func Job(r *store.JobRow) JobInfo {
	return JobInfo{
		ID: r.ID, Queue: r.Queue, Handler: r.Handler, Payload: r.Payload, PayloadHash: str(r.PayloadHash),
		Priority: r.Priority, Status: r.Status, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
		AvailableAt: r.AvailableAt, ReservedAt: tm(r.ReservedAt), ReservedBy: str(r.ReservedBy),
		CompletedAt: tm(r.CompletedAt), FailedAt: tm(r.FailedAt), ErrorMessage: str(r.ErrorMessage),
		WorkflowID: i64(r.WorkflowID), StepIndex: i64(r.StepIndex), DependsOn: i64(r.DependsOn),
		BatchID: i64(r.BatchID), ConcurrencyGroup: str(r.ConcurrencyGroup), ConcurrencyLimit: i64(r.ConcurrencyLimit),
		CostUnits: r.CostUnits, HeartbeatData: str(r.HeartbeatData), SessionID: str(r.SessionID),
		WorkerSession: str(r.WorkerSession), CreatedAt: r.CreatedAt,
	}
}

// Jobs is the view of jobs rows.
func Jobs(rows []store.JobRow) []JobInfo {
	if rows == nil {
		return nil
	}
	out := make([]JobInfo, len(rows))
	for i := range rows {
		out[i] = Job(&rows[i])
	}
	return out
}

// JobRow is the row a view was read from, as far as the view keeps it
// (the attempt limit a worker applies is computed from a row).
func JobRow(j *JobInfo) store.JobRow {
	return store.JobRow{
		ID: j.ID, Queue: j.Queue, Handler: j.Handler, Payload: j.Payload, PayloadHash: nullStr(j.PayloadHash),
		Priority: j.Priority, Status: j.Status, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		AvailableAt: j.AvailableAt, ReservedAt: nullTm(j.ReservedAt), ReservedBy: nullStr(j.ReservedBy),
		CompletedAt: nullTm(j.CompletedAt), FailedAt: nullTm(j.FailedAt), ErrorMessage: nullStr(j.ErrorMessage),
		WorkflowID: nullI64(j.WorkflowID), StepIndex: nullI64(j.StepIndex), DependsOn: nullI64(j.DependsOn),
		BatchID: nullI64(j.BatchID), ConcurrencyGroup: nullStr(j.ConcurrencyGroup), ConcurrencyLimit: nullI64(j.ConcurrencyLimit),
		CostUnits: j.CostUnits, HeartbeatData: nullStr(j.HeartbeatData), SessionID: nullStr(j.SessionID),
		WorkerSession: nullStr(j.WorkerSession), CreatedAt: j.CreatedAt,
	}
}

// StoreJobFilter is the store's filter for f.
func StoreJobFilter(f JobFilter) store.ListFilter {
	return store.ListFilter{Queue: f.Queue, Status: f.Status, Handler: f.Handler, Limit: f.Limit}
}

// Log is the view of a logs row.
func Log(r *store.LogRow) LogEntry {
	return LogEntry{
		ID: r.ID, JobID: i64(r.JobID), WorkflowID: i64(r.WorkflowID), StepIndex: i64(r.StepIndex),
		Handler: r.Handler, Queue: r.Queue, Event: r.Event, Attempt: i64(r.Attempt), DurationMS: i64(r.DurationMS),
		MemoryPeakKB: i64(r.MemoryPeakKB), ErrorMessage: str(r.ErrorMessage), ErrorClass: str(r.ErrorClass),
		ErrorTrace: str(r.ErrorTrace), Context: str(r.Context), CreatedAt: r.CreatedAt,
	}
}

// Logs is the view of logs rows.
func Logs(rows []store.LogRow) []LogEntry {
	if rows == nil {
		return nil
	}
	out := make([]LogEntry, len(rows))
	for i := range rows {
		out[i] = Log(&rows[i])
	}
	return out
}

// StoreLogFilter is the store's filter for f.
func StoreLogFilter(f LogFilter) store.LogFilter {
	return store.LogFilter{JobID: nullI64(f.JobID), WorkflowID: nullI64(f.WorkflowID), Handler: nullStr(f.Handler),
		Event: nullStr(f.Event), Since: nullTm(f.Since), Limit: f.Limit}
}

// Handlers is the view of handler stats.
func Handlers(rows []store.HandlerStats) []HandlerStats {
	if rows == nil {
		return nil
	}
	out := make([]HandlerStats, len(rows))
	for i, r := range rows {
		out[i] = HandlerStats(r)
	}
	return out
}

// Queues is the view of queue stats.
func Queues(rows []store.QueueStats) []QueueStats {
	if rows == nil {
		return nil
	}
	out := make([]QueueStats, len(rows))
	for i, r := range rows {
		out[i] = QueueStats{Queue: r.Queue, Counts: r.Counts, Paused: r.Paused, Unclaimed: UnclaimedAll(r.Unclaimed)}
		if r.NeedsAttention != nil {
			out[i].NeedsAttention = make([]Attention, len(r.NeedsAttention))
			for k, a := range r.NeedsAttention {
				out[i].NeedsAttention[k] = Attention(a)
			}
		}
	}
	return out
}

// UnclaimedAll is the view of unclaimed handler lines.
func UnclaimedAll(rows []store.Unclaimed) []Unclaimed {
	if rows == nil {
		return nil
	}
	out := make([]Unclaimed, len(rows))
	for i, r := range rows {
		out[i] = Unclaimed(r)
	}
	return out
}

// Stuck is the view of a stuck job.
func Stuck(j store.StuckJob) StuckJob {
	return StuckJob{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Reason: j.Reason()}
}

// Migrate is the view of a migration report.
func Migrate(r store.MigrateReport) MigrateReport { return MigrateReport(r) }

// Server is the view of the server's checks.
func Server(i store.ServerInfo) ServerInfo { return ServerInfo(i) }

// Activities is the view of the activity counts.
func Activities(m store.ActivityMetrics) ActivityMetrics { return ActivityMetrics(m) }

// Insert is the view of a dispatch's columns.
func Insert(p *store.InsertJob) InsertRow {
	return InsertRow{
		Queue: p.Queue, Handler: p.Handler, Payload: p.Payload, Priority: p.Priority, Delay: p.Delay,
		MaxAttempts: p.MaxAttempts, Unique: p.Unique, WorkflowID: i64(p.WorkflowID), StepIndex: i64(p.StepIndex),
		DependsOn: i64(p.DependsOn), BatchID: i64(p.BatchID), ConcurrencyGroup: p.ConcurrencyGroup,
		ConcurrencyLimit: p.ConcurrencyLimit, CostUnits: p.CostUnits, SessionID: p.SessionID, WorkerSession: p.WorkerSession,
	}
}

func str(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func i64(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

func tm(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

func nullStr(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func nullI64(n *int64) sql.NullInt64 {
	if n == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *n, Valid: true}
}

func nullTm(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: *t, Valid: true}
}

// Webhook is one registered webhook.
type Webhook struct {
	ID        int64     `json:"id"`
	Event     string    `json:"event"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
}

// Webhooks is the view of webhook rows.
func Webhooks(rows []store.WebhookRow) []Webhook {
	if rows == nil {
		return nil
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = Webhook(r)
	}
	return out
}

// Schedule is one row of the schedules table (the plugin's Scheduler).
type Schedule struct {
	ID      int64
	Handler string
	// Payload is the JSON bytes each run dispatches.
	Payload        string
	Queue          string
	Expression     string
	ExpressionType string
	LastRun        *time.Time
	NextRun        time.Time
	OverlapPolicy  string
	Enabled        bool
	CreatedAt      time.Time
}

// ScheduleOf is the view of a schedule row.
func ScheduleOf(r *store.ScheduleRow) Schedule {
	return Schedule{ID: r.ID, Handler: r.Handler, Payload: r.Payload, Queue: r.Queue, Expression: r.Expression,
		ExpressionType: r.ExpressionType, LastRun: tm(r.LastRun), NextRun: r.NextRun, OverlapPolicy: r.OverlapPolicy,
		Enabled: r.Enabled, CreatedAt: r.CreatedAt}
}

// Schedules is the view of schedule rows.
func Schedules(rows []store.ScheduleRow) []Schedule {
	if rows == nil {
		return nil
	}
	out := make([]Schedule, len(rows))
	for i := range rows {
		out[i] = ScheduleOf(&rows[i])
	}
	return out
}
