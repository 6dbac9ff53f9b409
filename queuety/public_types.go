package queuety

import (
	"context"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// The API hands out a few types implemented in internal packages; these
// aliases give them public names, so a user's module can declare them
// (a user cannot import internal/). internal/layout's test fails on an
// exported signature that names an internal type without one.
type (
	// Clock is the application clock (Config.Clock): every time the
	// daemon computes in Go is read from it, so tests can move it.
	Clock = clock.Clock
	// Ticker is what Clock.NewTicker returns: a time.Ticker on the
	// clock's time, so a test's fake clock drives the worker's loops.
	Ticker = clock.Ticker

	// SessionSnapshot is one worker session as lifecycle results and
	// operators see it (durable-workflow's workerSessionSnapshot).
	SessionSnapshot = sessions.Snapshot
	// SessionHolder is the registration of a session's lease owner as the
	// snapshot shows it.
	SessionHolder = sessions.Holder
	// SessionResult is the answer to a session lifecycle operation (a
	// renewal on heartbeat, a close): admitted or refused, and why.
	SessionResult = sessions.Result
	// WorkerRegistration is what a worker registers (table workers).
	WorkerRegistration = sessions.Registration
	// SessionWorker is a stored registration as operators see it.
	SessionWorker = sessions.Worker
)

// The rows the Client reads, as views of the API's own (internal/rowview
// says why they are declared there): the storage layer's types never
// appear in this package's API, so it can change without breaking users.
type (
	// JobInfo is one row of the jobs table (Client.Job, Jobs, JobsByID).
	JobInfo = rowview.JobInfo
	// JobFilter narrows Client.Jobs; empty fields match everything.
	JobFilter = rowview.JobFilter
	// LogEntry is one row of the logs table (Client.JobLogs, Logs).
	LogEntry = rowview.LogEntry
	// LogFilter selects log rows (`queuety log`, Queuety::query_logs).
	LogFilter = rowview.LogFilter
	// HandlerStats is one handler's line of `queuety metrics`.
	HandlerStats = rowview.HandlerStats
	// QueueStats counts one queue's jobs by status (Client.Stats, Status).
	QueueStats = rowview.QueueStats
	// Attention is one kind of row of a queue that can never run as it is.
	Attention = rowview.Attention
	// Unclaimed is a handler whose pending jobs on a queue no live queuety
	// worker runs.
	Unclaimed = rowview.Unclaimed
	// StuckJob is a job that can never run as it is, and why.
	StuckJob = rowview.StuckJob
	// StuckScan bounds a diagnosis (Client.Diagnose).
	StuckScan = rowview.StuckScan
	// MigrateReport says what Client.Migrate created or added.
	MigrateReport = rowview.MigrateReport
	// ServerInfo is what Open checked about the database server.
	ServerInfo = rowview.ServerInfo
	// ActivityMetrics counts local and queued activities.
	ActivityMetrics = rowview.ActivityMetrics
	// InsertRow is every column a dispatch writes (DispatchRow).
	InsertRow = rowview.InsertRow
)

// ErrJobNotFound is the error of a by-id operation on a job that does not
// exist (errors.Is).
var ErrJobNotFound = store.ErrJobNotFound

// Workers lists the registered workers of namespace ("" = default), with
// their staleness, as `queuety worker list` shows them.
func (c *Client) Workers(ctx context.Context, namespace string) ([]SessionWorker, error) {
	return c.sessions.Workers(ctx, namespace)
}
