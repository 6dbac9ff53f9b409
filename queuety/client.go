package queuety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// Client dispatches and manages jobs in the Queuety tables. It is safe for
// concurrent use; Workers are built from it.
type Client struct {
	// storeDoor lets the module's own packages (the CLI, the dashboard)
	// reach store through internal/clientstore; users have no way in.
	storeDoor
	cfg    Config
	db     *sqlx.DB
	pipe   *sqlx.DB // pipelined transactions' connections (store.UsePipeline)
	store  *store.Store
	log    *slog.Logger
	server store.ServerInfo
	// sessions holds worker registrations and session leases.
	sessions *sessions.Registry
	// retentionBatch, when set, replaces purgeBatch (tests).
	retentionBatch int
	// sharedDB: db belongs to a Sites pool shared by several sites'
	// clients, which closes it; Close leaves it open.
	sharedDB bool
	// sweepTurn, with a shared pool, is held by the retention sweep of one
	// of its sites at a time (Sweep); nil: the client's own pool.
	sweepTurn chan struct{}
	// engines are the workflow engines of the Client's calls, one per
	// registry (workflow_lifecycle.go).
	engines engineSet
}

// Open validates cfg, connects, and checks the server: SKIP LOCKED support
// and a UTC default time zone (see Config.AllowNonUTC).
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	if cfg.DSN == "" {
		return nil, errors.New("no database configured: pass --dsn, set QUEUETY_DSN, or point --wp-config at a wp-config.php")
	}
	if err := store.CheckDSN(cfg.DSN); err != nil {
		return nil, &ConfigError{err}
	}
	tables, err := cfg.naming().Resolve()
	if err != nil {
		return nil, &ConfigError{err}
	}
	info, err := store.InspectServer(ctx, cfg.DSN, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if err := info.CheckServer(cfg.AllowNonUTC); err != nil {
		return nil, err
	}
	// Local activities' outcome transactions are pipelined (fewer round
	// trips a step) on a few connections of their own.
	mainConns, pipeConns := splitConns(cfg.MaxConns)
	db, pipe, err := store.OpenWithPipeline(ctx, cfg.DSN, mainConns, pipeConns, cfg.Logger)
	if err != nil {
		return nil, err
	}
	st, err := store.New(db, tables, cfg.Clock)
	if err != nil {
		_ = (&Client{db: db, pipe: pipe}).Close()
		return nil, err
	}
	if pipe != nil {
		st.UsePipeline(pipe)
	}
	if err := chooseCoordination(ctx, st, cfg); err != nil {
		_ = (&Client{db: db, pipe: pipe}).Close()
		return nil, err
	}
	reg := sessions.New(st, sessions.Config{StaleAfter: cfg.WorkerStaleAfter, Logger: cfg.Logger, Clock: cfg.Clock})
	return &Client{storeDoor: clientstore.NewDoor(st), cfg: cfg, db: db, pipe: pipe, store: st, log: cfg.Logger, server: info, sessions: reg}, nil
}

// storeDoor is embedded under this unexported name, so the field stays
// unexported while its method, known only to clientstore, is promoted.
type storeDoor = clientstore.Door

// ConfigError is a configuration that cannot work (a bad value, a table
// name that cannot be built); the message names the setting.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// splitConns shares MaxConns between the main handle and the pipeline
// (store.UsePipeline): one pipeline connection in 16, at least one, once
// the main handle keeps the two it needs. A local chain holds a pipeline
// connection only for its outcome transactions, and one that finds none
// free runs unpipelined on the main handle, so a few serve many.
func splitConns(maxConns int) (main, pipe int) {
	if maxConns < 3 {
		return maxConns, 0
	}
	pipe = max(1, maxConns/16)
	return maxConns - pipe, pipe
}

// Close closes the database handles.
func (c *Client) Close() error {
	if c.sharedDB {
		return nil
	}
	err := c.db.Close()
	if c.pipe != nil {
		err = errors.Join(err, c.pipe.Close())
	}
	return err
}

// Config returns the validated configuration.
func (c *Client) Config() Config { return c.cfg }

// Server returns what was read about the server at Open.
func (c *Client) Server() ServerInfo { return rowview.Server(c.server) }

// Migrate creates missing Queuety tables and adds our extensions.
func (c *Client) Migrate(ctx context.Context) (MigrateReport, error) {
	rep, err := c.store.Migrate(ctx)
	return rowview.Migrate(rep), err
}

// DispatchOption sets one column of a dispatched job (PendingJob's fluent
// methods).
type DispatchOption func(*dispatchColumns) error

// dispatchColumns are the columns DispatchOptions set: the storage
// layer's insert, behind a type of this package, so an option's signature
// names no storage type.
type dispatchColumns struct{ store.InsertJob }

// OnQueue sets the queue (default "default").
func OnQueue(q string) DispatchOption {
	return func(p *dispatchColumns) error {
		if err := ValidateQueue(q); err != nil {
			return err
		}
		p.Queue = q
		return nil
	}
}

// WithPriority sets the priority (0-3; higher runs first).
func WithPriority(pr Priority) DispatchOption {
	return func(p *dispatchColumns) error {
		if !pr.Valid() {
			return fmt.Errorf("priority %d: Queuety priorities are 0 (low) to 3 (urgent)", pr)
		}
		p.Priority = int(pr)
		return nil
	}
}

// Delay makes the job claimable only after d (whole seconds, as PHP).
func Delay(d time.Duration) DispatchOption {
	return func(p *dispatchColumns) error {
		if d < 0 {
			return fmt.Errorf("delay %s: must not be negative", d)
		}
		p.Delay = d.Truncate(time.Second)
		return nil
	}
}

// MaxAttempts sets max_attempts (1-255).
func MaxAttempts(n int) DispatchOption {
	return func(p *dispatchColumns) error {
		if n < 1 || n > 255 {
			return fmt.Errorf("max attempts %d: must be between 1 and 255", n)
		}
		p.MaxAttempts = n
		return nil
	}
}

// Unique skips the insert when a pending or processing job has the same
// handler and payload bytes, returning that job's id.
func Unique() DispatchOption {
	return func(p *dispatchColumns) error { p.Unique = true; return nil }
}

// After makes the job wait until job id has completed (depends_on).
func After(id int64) DispatchOption {
	return func(p *dispatchColumns) error {
		if id < 1 {
			return fmt.Errorf("depends on job %d: not a job id", id)
		}
		p.DependsOn = store.Int(id)
		return nil
	}
}

// InBatch sets batch_id.
func InBatch(id int64) DispatchOption {
	return func(p *dispatchColumns) error {
		if id < 1 {
			return fmt.Errorf("batch %d: not a batch id", id)
		}
		p.BatchID = store.Int(id)
		return nil
	}
}

// ConcurrencyGroup sets concurrency_group and concurrency_limit.
func ConcurrencyGroup(group string, limit int) DispatchOption {
	return func(p *dispatchColumns) error {
		if phpjson.Trim(group) == "" || len(group) > 191 {
			return fmt.Errorf("concurrency group %q: must be 1 to 191 characters", group)
		}
		if limit < 1 || limit > 65535 {
			return fmt.Errorf("concurrency limit %d: must be between 1 and 65535", limit)
		}
		p.ConcurrencyGroup, p.ConcurrencyLimit = group, limit
		return nil
	}
}

// CostUnits sets cost_units (>= 1).
func CostUnits(n int) DispatchOption {
	return func(p *dispatchColumns) error {
		if n < 1 {
			return fmt.Errorf("cost units %d: must be at least 1", n)
		}
		p.CostUnits = n
		return nil
	}
}

// Dispatched is the result of Dispatch.
type Dispatched struct {
	ID int64 `json:"id"`
	// Existing is true when Unique found a live duplicate and nothing was
	// inserted.
	Existing bool `json:"existing"`
}

// Dispatch inserts a job exactly as Queuety's Queue::dispatch does. The
// payload may be a phpjson.Value, raw JSON ([]byte or json.RawMessage), a
// map, a struct (via encoding/json), or nil for an empty payload; it must be
// a JSON object (or an empty array) and is stored as PHP's json_encode would
// write it, so payload_hash matches PHP's for the same payload.
func (c *Client) Dispatch(ctx context.Context, handler string, payload any, opts ...DispatchOption) (Dispatched, error) {
	p, err := dispatchRow(handler, payload, opts)
	if err != nil {
		return Dispatched{}, err
	}
	id, existing, err := c.store.InsertJob(ctx, p)
	if err != nil {
		return Dispatched{}, err
	}
	return Dispatched{ID: id, Existing: existing}, nil
}

// CheckDispatch validates a handler name and options without dispatching,
// so a command line can reject bad input before connecting.
func CheckDispatch(handler string, opts ...DispatchOption) error {
	_, err := dispatchParams(handler, opts)
	return err
}

func dispatchParams(handler string, opts []DispatchOption) (store.InsertJob, error) {
	p := dispatchColumns{store.InsertJob{Queue: DefaultQueue, Handler: handler, MaxAttempts: DefaultMaxAttempts, CostUnits: 1}}
	if err := store.CheckName(store.HandlerName, handler); err != nil {
		return p.InsertJob, err
	}
	if strings.HasPrefix(handler, reservedHandlerPrefix) {
		// Rows with these names are written by Queuety itself (workflow
		// placeholders, state machine actions, WP-Cron events); one
		// dispatched by hand would be run as one of them or buried.
		return p.InsertJob, fmt.Errorf("handler %q: names starting with %s are reserved for Queuety's own jobs", handler, reservedHandlerPrefix)
	}
	for _, opt := range opts {
		if err := opt(&p); err != nil {
			return p.InsertJob, err
		}
	}
	return p.InsertJob, settleWorkerSession(&p.InsertJob)
}

// EncodePayload turns a Go payload into the bytes Queuety stores.
func EncodePayload(payload any) ([]byte, error) {
	if payload == nil {
		return []byte("[]"), nil
	}
	v, err := toValue(payload)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if _, ok := v.AsObject(); !ok {
		return nil, fmt.Errorf("payload: must be a JSON object, got %s", v.Kind())
	}
	return phpjson.Encode(v)
}

// toValue converts a Go value to an ordered JSON value: phpjson values and
// raw JSON as they are (key order kept), anything else through
// encoding/json (struct fields in declaration order, map keys sorted).
func toValue(x any) (phpjson.Value, error) {
	switch p := x.(type) {
	case phpjson.Value:
		return p, nil
	case []byte:
		return phpjson.Decode(p)
	case json.RawMessage:
		return phpjson.Decode(p)
	case string:
		return phpjson.DecodeString(p)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return phpjson.Value{}, err
	}
	return phpjson.Decode(b)
}

// Pause pauses a queue: workers (ours and PHP's) stop claiming from it.
func (c *Client) Pause(ctx context.Context, queue string) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	return c.store.PauseQueue(ctx, queue)
}

// Resume resumes a paused queue.
func (c *Client) Resume(ctx context.Context, queue string) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	return c.store.ResumeQueue(ctx, queue)
}

// Stats returns per-queue job counts by status.
func (c *Client) Stats(ctx context.Context) ([]QueueStats, error) {
	stats, err := c.store.Stats(ctx)
	return rowview.Queues(stats), err
}

// Jobs lists jobs newest first.
func (c *Client) Jobs(ctx context.Context, f JobFilter) ([]JobInfo, error) {
	if f.Status != "" && !validStatus(f.Status) {
		return nil, fmt.Errorf("status %q: want one of %s", f.Status, strings.Join(store.Statuses, ", "))
	}
	rows, err := c.store.ListJobs(ctx, rowview.StoreJobFilter(f))
	return rowview.Jobs(rows), err
}

func validStatus(s string) bool {
	for _, v := range store.Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Job reads one job; a missing one is ErrJobNotFound.
func (c *Client) Job(ctx context.Context, id int64) (*JobInfo, error) {
	row, err := c.store.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	j := rowview.Job(row)
	return &j, nil
}

// JobLogs reads a job's log rows, oldest first.
func (c *Client) JobLogs(ctx context.Context, id int64) ([]LogEntry, error) {
	rows, err := c.store.JobLogs(ctx, id)
	return rowview.Logs(rows), err
}

// RetryJob makes a job pending again now (Queue::retry(id, 0)).
func (c *Client) RetryJob(ctx context.Context, id int64) error { return c.store.RetryJob(ctx, id) }

// RetryBuried retries every buried job (of queue, if not empty).
func (c *Client) RetryBuried(ctx context.Context, queue string) (int, error) {
	return c.store.RetryBuried(ctx, queue)
}

// ManualBuryMessage is the message `bury` writes, as Queuety's CLI does.
const ManualBuryMessage = "Manually buried via CLI."

// BuryJob buries a job by hand.
func (c *Client) BuryJob(ctx context.Context, id int64, message string) error {
	if message == "" {
		message = ManualBuryMessage
	}
	return c.store.BuryJob(ctx, id, message)
}

// DeleteJob deletes a job row (its logs stay).
func (c *Client) DeleteJob(ctx context.Context, id int64) error { return c.store.DeleteJob(ctx, id) }

// CountBuried counts the buried jobs (of queue, if not empty) RetryBuried
// would retry.
func (c *Client) CountBuried(ctx context.Context, queue string) (int, error) {
	return c.store.CountBuried(ctx, queue)
}

// CountPurgeable counts the completed jobs PurgeCompleted(age) would
// delete now.
func (c *Client) CountPurgeable(ctx context.Context, age time.Duration) (int, error) {
	if age < 0 {
		return 0, fmt.Errorf("older than %s: must not be negative", age)
	}
	return c.store.CountPurgeable(ctx, c.cfg.Clock.Now().Add(-age))
}

// PurgeCompleted deletes completed jobs older than age.
func (c *Client) PurgeCompleted(ctx context.Context, age time.Duration) (int, error) {
	if age < 0 {
		return 0, fmt.Errorf("older than %s: must not be negative", age)
	}
	return c.store.PurgeCompleted(ctx, c.cfg.Clock.Now().Add(-age))
}

// Rescued counts what one stale sweep did.
type Rescued struct {
	Retried int `json:"retried"`
	Buried  int `json:"buried"`
}

// RecoverStale is Queuety's recover_stale with the configured stale
// timeout: processing rows not heard from are retried with backoff, or
// buried with "Stale: worker died without completing." when their attempts
// are used up. reg supplies handler options (nil: row and payload only).
// With Config.Workflows, workflow step jobs are swept too; a buried step
// fails its workflow (a for_each branch is recorded as a branch failure).
func (c *Client) RecoverStale(ctx context.Context, reg *Registry) (Rescued, error) {
	var total Rescued
	cutoff := c.cfg.Clock.Now().Add(-c.cfg.StaleTimeout)
	for {
		const slice = 500
		r, buried, err := c.store.RecoverStaleRows(ctx, cutoff, slice, func(j *store.JobRow) store.StaleDecision {
			bury, delay := c.settingsFor(reg, j, parsePayloadLenient(j.Payload)).retryOrBury(j.Attempts, nil)
			if bury {
				return store.StaleDecision{Bury: true}
			}
			return store.StaleDecision{Delay: delay}
		})
		b := len(buried)
		c.failStaleMachineActions(ctx, reg, buried) // machine_stale.go
		total.Retried += r
		total.Buried += b
		if err != nil {
			return total, err
		}
		if r+b < slice {
			break
		}
	}
	if !c.cfg.Workflows {
		return total, nil
	}
	// Workflow step jobs (Config.Workflows): retried the same way, or
	// buried and their workflow failed (a for_each branch recorded as a
	// branch failure).
	eng := c.engine(reg)
	for {
		const slice = 500
		r, b, err := eng.RecoverStaleSteps(ctx, cutoff, slice, func(j *store.JobRow) (bool, time.Duration) {
			return c.settingsFor(reg, j, parsePayloadLenient(j.Payload)).retryOrBury(j.Attempts, nil)
		})
		total.Retried += r
		total.Buried += b
		if err != nil || r+b < slice {
			return total, err
		}
	}
}

// chooseCoordination sets the store's Coordination from cfg, asking the
// server when cfg leaves it to "auto".
func chooseCoordination(ctx context.Context, st *store.Store, cfg Config) error {
	c, auto, err := store.ParseCoordination(cfg.Coordination)
	if err != nil {
		return &ConfigError{err}
	}
	if auto {
		if c, err = st.DetectCoordination(ctx); err != nil {
			return err
		}
	}
	st.SetCoordination(c)
	if c == store.CoordinationRows && cfg.Logger != nil {
		cfg.Logger.Info("cluster coordination: locks are rows of the locks table, read-backs causal", "auto", auto)
	}
	return nil
}
