package queuety

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
)

// Defaults, named after the Queuety constants they mirror where there is one.
const (
	DefaultTablePrefix    = "wp_"     // WordPress $table_prefix
	DefaultQueue          = "default" //
	DefaultMaxAttempts    = 3         // jobs.max_attempts default
	DefaultConcurrency    = 10        //
	DefaultMaxClaimBatch  = 500       // rows one claim round trip may take
	DefaultPollInterval   = 50 * time.Millisecond
	DefaultClaimLanes     = 1
	DefaultShutdownGrace  = 30 * time.Second
	DefaultStaleTimeout   = 600 * time.Second  // QUEUETY_STALE_TIMEOUT
	DefaultJobTimeout     = 300 * time.Second  // QUEUETY_MAX_EXECUTION_TIME
	DefaultRescueSchedule = "@every 1m"        // PHP sweeps once a minute too
	DefaultPauseCacheTTL  = time.Second        // PHP caches 5 s
	DefaultRetention      = 7 * 24 * time.Hour // QUEUETY_RETENTION_DAYS
	DefaultRetentionDays  = 7                  // QUEUETY_RETENTION_DAYS, the plugin's default of `purge`
	DefaultRetentionSpec  = "@hourly"          // the retention sweep inside `work`

	DefaultNamespace             = "default"        // worker registrations and sessions
	DefaultMaxWorkerSessions     = 10               // max_concurrent_worker_sessions
	DefaultWorkerStaleAfter      = 60 * time.Second // a registration not heard from is stale
	DefaultRegistrationHeartbeat = 10 * time.Second // heartbeat_interval_seconds

	DefaultWaitSweepInterval  = 5 * time.Second // the wait sweeper of --workflows
	DefaultSignalPollInterval = 2 * time.Second // the signal poller of --workflows

	DefaultWorkflowStepBatch  = engine.DefaultStepBatch       // step completions one transaction may group
	DefaultWorkflowChainSteps = engine.DefaultChainSteps      // steps a worker may run in a row without a claim
	DefaultMaxForEachItems    = 10_000                        // items of one for_each step
	DefaultForEachPageSize    = engine.DefaultForEachPageSize // branch jobs one for_each transaction inserts
)

// Floors and ceilings of the worker's settings. Every interval below runs
// at least one query per tick, even on an idle worker, so a value near zero
// turns the worker into a busy loop against the database (1ns measured:
// 2-3 s of daemon and 3-6 s of MariaDB CPU per 5 s, against 0.2 and 0.4 s
// at the defaults). The floors sit well below the defaults and at or below
// what the tests and benchmarks use; the ceilings bound one transaction or
// one claim to what a server handles without long lock holds.
const (
	MinPollInterval      = 5 * time.Millisecond   // one claim query per lane per tick (bench local-activities uses 5ms)
	MinServiceInterval   = 10 * time.Millisecond  // wait sweep, signal poll, deadline check: one query each per tick
	MinHeartbeatInterval = 100 * time.Millisecond // one UPDATE of the running jobs per tick
	MaxMaxClaimBatch     = 10000                  // rows one claim locks and writes in one transaction
	MaxClaimLanes        = 64                     // claims in flight, each holding a connection
	MaxWorkflowStepBatch = 1000                   // step completions one transaction groups
	MaxWorkflowChain     = 1000                   // steps one slot runs in a row without a claim
)

// Config is the one configuration of a Client and its Workers. The zero
// value of every field means its default; Validate fills them in.
type Config struct {
	// DSN is a go-sql-driver/mysql DSN (user:pass@tcp(host:3306)/db). The
	// driver settings we rely on (UTC, interpolation) are added to it.
	DSN string
	// TablePrefix is WordPress's $table_prefix; empty means "wp_" unless
	// NoTablePrefix is set.
	TablePrefix string
	// NoTablePrefix names the tables without a WordPress prefix, as PHP
	// does for wp-config's `$table_prefix = '';` (the plugin builds
	// $wpdb->prefix . 'queuety_jobs'). TablePrefix must then be empty.
	NoTablePrefix bool
	// QueuetyTablePrefix is QUEUETY_TABLE_PREFIX; nil means "queuety_".
	QueuetyTablePrefix *string
	// TableOverrides maps a table suffix to a QUEUETY_TABLE_<NAME> value.
	TableOverrides map[string]string
	// AllowNonUTC lets the daemon start on a server whose default time zone
	// is not UTC. Only safe when every writer sets its session zone to UTC.
	AllowNonUTC bool
	// MaxConns caps open database connections (default Concurrency/4+4);
	// one in 16 of them (once the other two are kept) serves local
	// activities' pipelined outcome transactions (store.UsePipeline).
	MaxConns int
	// Coordination is how locks across daemons are kept: "auto" (or "")
	// asks the server (a Galera node with wsrep_on gets "rows"), "named"
	// uses GET_LOCK (one server), "rows" writes lock rows that hold across
	// a cluster's nodes and makes read-backs causal. See docs/clusters.md.
	Coordination string
	// ClaimSlices "on" makes daemons on different nodes of a Galera
	// cluster (every node a writer) claim from different slices of the
	// backlog first (see claimSlice), at the price of strict priority
	// order across slices; "off" (or "", the default) does not slice.
	ClaimSlices string

	// Queues are claimed in strict order: a later queue is served only when
	// the earlier ones have nothing claimable.
	Queues []string
	// Concurrency is how many jobs run at once in one Worker.
	Concurrency int
	// ClaimAll makes the worker claim every handler, burying those it has
	// no handler for ("Handler not found: x"), instead of leaving them in the
	// queue for PHP workers.
	ClaimAll bool
	// Workflows turns the workflow engine on: the worker also claims the
	// step jobs of running or paused workflows whose handler it has (Go
	// step handlers registered with Registry.RegisterStep, and the
	// placeholders the engine implements) and advances the workflows. Off
	// by default: workflow jobs are then left to PHP workers.
	Workflows bool
	// MaxJobs, when positive, is how many jobs the worker claims in all;
	// then it claims no more (`work --max-jobs`, `--once`; see
	// Worker.BudgetSpent). 0: no limit.
	MaxJobs int
	// MaxClaimBatch caps the rows one claim round trip takes.
	MaxClaimBatch int
	// ClaimLanes is how many claims a worker keeps going at once,
	// each with its share of Concurrency (default 1). A second lane
	// overlaps one claim with another, but it reads past the first's
	// locked rows (SKIP LOCKED), which costs the server more than the
	// overlap saves: noop jobs ran 13% faster on one lane at 200 slots,
	// with less server CPU a job at 10 and 1,000 slots too.
	ClaimLanes int
	// PollInterval is how long an idle worker waits before claiming again
	// (with ±20% jitter so idle workers do not poll in step); at least
	// MinPollInterval.
	PollInterval time.Duration
	// ShutdownGrace is how long Stop lets in-flight jobs finish.
	ShutdownGrace time.Duration
	// StaleTimeout: a processing row not heard from for this long is
	// rescued (retried or buried) by the stale sweep.
	StaleTimeout time.Duration
	// HeartbeatInterval is how often running jobs' reserved_at is
	// refreshed; default StaleTimeout/4, at most one minute; at least
	// MinHeartbeatInterval.
	HeartbeatInterval time.Duration
	// RescueSchedule is the cron spec of the stale sweep inside `work`
	// ("" = default, "off" in any case = disabled).
	RescueSchedule string
	// RetentionDays: completed jobs older than this many days are deleted
	// by the retention sweep inside `work` (--retention-days,
	// QUEUETY_GO_RETENTION_DAYS). 0, the default, keeps them for ever, as
	// the plugin does: it never purges on its own (its
	// QUEUETY_RETENTION_DAYS is only the default of `wp queuety purge`).
	RetentionDays int
	// LogRetentionDays: log rows older than this are deleted by the sweep
	// (--log-retention-days, QUEUETY_GO_LOG_RETENTION_DAYS; 0, the
	// default: for ever).
	LogRetentionDays int
	// BuriedRetentionDays: buried jobs older than this are deleted (0: for
	// ever).
	BuriedRetentionDays int
	// RetentionSchedule is the cron spec of the retention sweep ("" =
	// hourly, "off" in any case = disabled). No sweep runs when every
	// retention above is 0.
	RetentionSchedule string
	// DeadlineInterval is how often a worker with Workflows checks for
	// running workflows past their deadline (Queuety's check_deadlines,
	// every 60 s in PHP's worker); 0 = default, negative = never.
	DeadlineInterval time.Duration
	// ScheduleInterval is how often a worker runs the scheduler tick that
	// enqueues due schedules (every 60 s in PHP's worker loop); 0 =
	// default, negative = never.
	ScheduleInterval time.Duration
	// JobTimeout is the default per-attempt time limit.
	JobTimeout time.Duration
	// Backoff is the default retry backoff (QUEUETY_RETRY_BACKOFF).
	Backoff Backoff
	// PauseCacheTTL is how long a queue's paused flag is cached.
	PauseCacheTTL time.Duration
	// WorkerID names this worker in reserved_by; default host-pid-random.
	WorkerID string
	// WaitSweepInterval is how often a worker with Workflows re-evaluates
	// waiting_for_workflows workflows (and run_workflow parents of
	// terminal children) whose wake-up was lost; SignalPollInterval how
	// often it looks for signal rows other processes inserted for waiting
	// workflows. Zero means the default; negative turns the service off.
	WaitSweepInterval  time.Duration
	SignalPollInterval time.Duration
	// WorkflowStepBatch is how many workflow step completions running at
	// the same time may share one database transaction (group commit: one
	// COMMIT, and one statement for each kind of row they write; a failing
	// step is undone alone). Zero means the default (128); 1 or negative
	// gives every step its own transaction.
	WorkflowStepBatch int
	// WorkflowChainSteps is how many workflow steps in a row a worker may
	// run without claiming them, each enqueued already claimed by the
	// step before it when the worker would claim it anyway (Go handler,
	// served and unpaused queue, no delay, group or session;
	// internal/engine/chain.go). Zero means the default (8); negative turns
	// chaining off, so every step goes through the claim.
	WorkflowChainSteps int
	// MaxForEachItems caps the items of one for_each step: a step over
	// more fails (buried with the workflow failed) with a message naming
	// the limit, before any branch job is planned. Every branch completion
	// rewrites the workflow state, which holds the items and the results
	// (the plugin's format), so the cost of a step grows with the square
	// of its items, and planning holds them all in memory. Zero means the
	// default (DefaultMaxForEachItems); negative: no limit, as the plugin.
	// A workflow's own max_for_each_items budget applies too.
	MaxForEachItems int
	// ForEachPageSize is how many branch jobs of a for_each step one
	// transaction inserts. A step with more items plans in pages: its
	// first branches run while the rest are inserted, and a plan cut
	// short (a kill, a shutdown) resumes at its recorded cursor. Zero
	// means the default (DefaultForEachPageSize, 1,000); a
	// fan-out that fits one page is planned exactly as the plugin does.
	ForEachPageSize int

	// Namespace scopes worker registrations and sessions ("default").
	Namespace string
	// Capabilities are the strings this worker offers to worker-session
	// requirements (gpu:nvidia-l4, fs:/mnt/models), matched exactly after
	// trimming.
	Capabilities []string
	// MaxWorkerSessions caps the session leases the worker holds at once
	// (max_concurrent_worker_sessions; 0 = default 10, negative = none: the
	// worker never takes session-bound jobs).
	MaxWorkerSessions int
	// WorkerStaleAfter: a registration not heartbeated for this long is
	// stale and the sessions it holds become orphaned (default 60s).
	WorkerStaleAfter time.Duration
	// RegistrationHeartbeat is how often a worker refreshes its
	// registration (default 10s; less than half of WorkerStaleAfter).
	RegistrationHeartbeat time.Duration

	// PluginSettings: debug rows and resource admission (plugin_settings.go).
	PluginSettings

	// Observer, when set, is told of claims and job outcomes (metrics).
	Observer Observer
	// Webhooks tunes the sending of the plugin's webhooks (webhooks.go).
	Webhooks WebhookConfig

	Logger *slog.Logger
	// Clock is the application clock: the times Queuety writes from PHP's
	// gmdate, and the ticks of the worker's loops (scheduler, deadlines,
	// wait sweeper, signal poller, session agent); the heartbeat and the
	// cron schedules keep the wall clock. Nil is the wall clock.
	Clock clock.Clock
}

// Validate fills in defaults (withDefaults) and rejects values that
// cannot work, naming the field (validate). Validating a validated Config
// changes nothing.
func (c *Config) Validate() error {
	c.withDefaults()
	return c.validate()
}

// withDefaults fills in the zero values and normalizes the spellings the
// worker compares with, topic by topic; it never fails.
func (c *Config) withDefaults() {
	c.claimDefaults() // first: the connection pool is sized by Concurrency
	c.databaseDefaults()
	c.jobDefaults() // HeartbeatInterval follows StaleTimeout
	c.workflowDefaults()
	c.sessionDefaults()
	c.maintenanceDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
}

// validate rejects values that cannot work, each error naming its field.
// It reads a Config withDefaults has filled in.
func (c *Config) validate() error {
	return errors.Join(
		c.validateDatabase(),
		c.validateClaim(),
		c.validateWorkflows(),
		c.validateSessions(),
		c.validateJobs(),
		c.validateMaintenance(),
		c.validateWebhooks(),
	)
}

// problems collects a topic's errors.
type problems []error

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }
func (p problems) err() error                   { return errors.Join(p...) }

// setDefault sets *v to def when it is zero.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func (c *Config) databaseDefaults() {
	if !c.NoTablePrefix && c.TablePrefix == "" {
		c.TablePrefix = DefaultTablePrefix
	}
	setDefault(&c.MaxConns, c.Concurrency/4+4)
}

func (c *Config) validateDatabase() error {
	var bad problems
	if c.NoTablePrefix && c.TablePrefix != "" {
		bad.add("table prefix %q together with no table prefix: set one or the other", c.TablePrefix)
	}
	if c.MaxConns < 2 {
		bad.add("max connections %d: need at least 2 (claims and completions run side by side)", c.MaxConns)
	}
	if _, _, err := store.ParseCoordination(c.Coordination); err != nil {
		bad.add("%v", err)
	}
	if c.ClaimSlices != "" && c.ClaimSlices != "on" && c.ClaimSlices != "off" {
		bad.add("claim slices %q: want on or off", c.ClaimSlices)
	}
	return bad.err()
}

func (c *Config) claimDefaults() {
	if len(c.Queues) == 0 {
		c.Queues = []string{DefaultQueue}
	}
	setDefault(&c.Concurrency, DefaultConcurrency)
	setDefault(&c.MaxClaimBatch, DefaultMaxClaimBatch)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.ClaimLanes, DefaultClaimLanes)
	setDefault(&c.PauseCacheTTL, DefaultPauseCacheTTL)
	c.QueueCostBudgets, c.GroupCostBudgets = normalizeBudgets(c.QueueCostBudgets), normalizeBudgets(c.GroupCostBudgets)
}

func (c *Config) validateClaim() error {
	var bad problems
	for _, q := range c.Queues {
		if err := ValidateQueue(q); err != nil {
			bad.add("queues: %w", err)
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		bad.add("concurrency %d: must be between 1 and 10000", c.Concurrency)
	}
	if c.MaxJobs < 0 {
		bad.add("max jobs %d: must not be negative (0: no limit)", c.MaxJobs)
	}
	if c.MaxClaimBatch < 1 || c.MaxClaimBatch > MaxMaxClaimBatch {
		bad.add("max claim batch %d: must be between 1 and %d", c.MaxClaimBatch, MaxMaxClaimBatch)
	}
	if c.PollInterval < MinPollInterval {
		bad.add("poll interval %s: must be at least %s, or an idle worker polls the database in a busy loop", c.PollInterval, MinPollInterval)
	}
	if c.ClaimLanes < 1 || c.ClaimLanes > MaxClaimLanes {
		bad.add("claim lanes %d: must be between 1 and %d", c.ClaimLanes, MaxClaimLanes)
	}
	return bad.err()
}

func (c *Config) workflowDefaults() {
	setDefault(&c.WorkflowStepBatch, DefaultWorkflowStepBatch)
	setDefault(&c.WorkflowChainSteps, DefaultWorkflowChainSteps)
	setDefault(&c.MaxForEachItems, DefaultMaxForEachItems)
	setDefault(&c.WaitSweepInterval, DefaultWaitSweepInterval)
	setDefault(&c.SignalPollInterval, DefaultSignalPollInterval)
	setDefault(&c.DeadlineInterval, DefaultDeadlineInterval)
	setDefault(&c.ScheduleInterval, DefaultScheduleInterval)
}

func (c *Config) validateWorkflows() error {
	var bad problems
	if c.WorkflowStepBatch > MaxWorkflowStepBatch {
		bad.add("workflow step batch %d: at most %d (one transaction holds them all)", c.WorkflowStepBatch, MaxWorkflowStepBatch)
	}
	if c.ForEachPageSize < 0 {
		bad.add("for_each page size %d: at least 1 (0: the default)", c.ForEachPageSize)
	}
	if c.WorkflowChainSteps > MaxWorkflowChain {
		bad.add("workflow chain steps %d: at most %d", c.WorkflowChainSteps, MaxWorkflowChain)
	}
	for name, d := range map[string]time.Duration{
		"wait sweep interval": c.WaitSweepInterval, "signal poll interval": c.SignalPollInterval, "deadline interval": c.DeadlineInterval,
		"schedule interval": c.ScheduleInterval,
	} {
		if d > 0 && d < MinServiceInterval {
			bad.add("%s %s: must be at least %s (or negative: off), or the service queries the database in a busy loop", name, d, MinServiceInterval)
		}
	}
	return bad.err()
}

func (c *Config) sessionDefaults() {
	setDefault(&c.Namespace, DefaultNamespace)
	setDefault(&c.MaxWorkerSessions, DefaultMaxWorkerSessions)
	setDefault(&c.WorkerStaleAfter, DefaultWorkerStaleAfter)
	setDefault(&c.RegistrationHeartbeat, DefaultRegistrationHeartbeat)
	var caps []string
	for _, cp := range c.Capabilities {
		if cp = strings.TrimSpace(cp); cp != "" {
			caps = append(caps, cp)
		}
	}
	c.Capabilities = caps
}

func (c *Config) validateSessions() error {
	var bad problems
	if len(c.Namespace) > 128 {
		bad.add("namespace %q: longer than 128 characters", c.Namespace)
	}
	if c.WorkerStaleAfter < time.Second {
		bad.add("worker stale after %s: must be at least 1s", c.WorkerStaleAfter)
	}
	if c.RegistrationHeartbeat <= 0 || 2*c.RegistrationHeartbeat > c.WorkerStaleAfter {
		bad.add("registration heartbeat %s: must be positive and at most half of worker stale after %s, or a live worker looks stale", c.RegistrationHeartbeat, c.WorkerStaleAfter)
	}
	for _, cp := range c.Capabilities {
		if len(cp) > 255 {
			bad.add("capability %q: longer than 255 characters", cp)
		}
	}
	return bad.err()
}

// jobDefaults: the limits of one attempt and of the worker's stop.
func (c *Config) jobDefaults() {
	setDefault(&c.ShutdownGrace, DefaultShutdownGrace)
	setDefault(&c.StaleTimeout, DefaultStaleTimeout)
	setDefault(&c.JobTimeout, DefaultJobTimeout)
	setDefault(&c.HeartbeatInterval, min(c.StaleTimeout/4, time.Minute))
	if c.Backoff.Strategy == "" && c.Backoff.List == nil {
		c.Backoff = Backoff{Strategy: BackoffExponential}
	}
}

func (c *Config) validateJobs() error {
	var bad problems
	for name, d := range map[string]time.Duration{
		"poll interval": c.PollInterval, "shutdown grace": c.ShutdownGrace, "stale timeout": c.StaleTimeout,
		"job timeout": c.JobTimeout, "heartbeat interval": c.HeartbeatInterval, "pause cache TTL": c.PauseCacheTTL,
	} {
		if d < 0 {
			bad.add("%s %s: must not be negative", name, d)
		}
	}
	if c.HeartbeatInterval > 0 && c.HeartbeatInterval < MinHeartbeatInterval {
		bad.add("heartbeat interval %s: must be at least %s", c.HeartbeatInterval, MinHeartbeatInterval)
	}
	if c.StaleTimeout > 0 && c.HeartbeatInterval >= c.StaleTimeout {
		bad.add("heartbeat interval %s: must be shorter than the stale timeout %s, or running jobs get rescued", c.HeartbeatInterval, c.StaleTimeout)
	}
	if c.StaleTimeout < time.Second {
		bad.add("stale timeout %s: must be at least 1s (reserved_at has one-second resolution)", c.StaleTimeout)
	}
	if err := c.Backoff.validate(); err != nil {
		bad.add("backoff: %w", err)
	}
	return bad.err()
}

// maintenanceDefaults: the rescuer's and retention's cron schedules,
// "off" spelled the way the worker compares it.
func (c *Config) maintenanceDefaults() {
	setDefault(&c.RescueSchedule, DefaultRescueSchedule)
	setDefault(&c.RetentionSchedule, DefaultRetentionSpec)
	for _, s := range []*string{&c.RescueSchedule, &c.RetentionSchedule} {
		if strings.EqualFold(strings.TrimSpace(*s), "off") {
			*s = "off"
		}
	}
}

func (c *Config) validateMaintenance() error {
	var bad problems
	if c.RescueSchedule != "off" {
		if _, err := cron.ParseStandard(c.RescueSchedule); err != nil {
			bad.add("rescue schedule %q: %w", c.RescueSchedule, err)
		}
	}
	if c.RetentionDays < 0 || c.LogRetentionDays < 0 || c.BuriedRetentionDays < 0 {
		bad.add("retention days %d, log retention days %d, buried retention days %d: must not be negative (0 keeps rows for ever)", c.RetentionDays, c.LogRetentionDays, c.BuriedRetentionDays)
	}
	if c.RetentionSchedule != "off" {
		if _, err := cron.ParseStandard(c.RetentionSchedule); err != nil {
			bad.add("retention schedule %q: %w", c.RetentionSchedule, err)
		}
	}
	return bad.err()
}

// validateWebhooks checks the webhook settings; WebhookConfig.validate
// (webhooks.go) still fills in their defaults as it checks them.
func (c *Config) validateWebhooks() error { return c.Webhooks.validate() }

func defDur(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// naming is the table naming this config selects.
func (c *Config) naming() store.Naming {
	return store.Naming{DBPrefix: c.TablePrefix, QueuetyPrefix: c.QueuetyTablePrefix, Overrides: c.TableOverrides}
}

// ValidateQueue checks a queue name by the rules of store.CheckName: it
// fits jobs.queue (VARCHAR(64)) and holds no control character. The
// error Is store.ErrInvalidName.
func ValidateQueue(q string) error { return store.CheckName(store.QueueName, q) }

// SplitQueues parses "a, b,,c" the way Queuety's worker does: split on
// commas, trimmed, empty entries dropped, order kept.
func SplitQueues(s string) []string {
	var out []string
	for _, q := range strings.Split(s, ",") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}
