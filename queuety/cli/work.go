package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/robfig/cron/v3"
	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

func workerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "queue", Aliases: []string{"q"}, Value: queuety.DefaultQueue, EnvVars: []string{"QUEUETY_QUEUES"}, Usage: "queues in strict priority order, comma-separated"},
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: queuety.DefaultConcurrency, EnvVars: []string{"QUEUETY_CONCURRENCY"}, Usage: "jobs run at once (with --php and no --concurrency: 200 for each PHP process, so claims and commits group; see docs/performance.md)"},
		&cli.BoolFlag{Name: "claim-all", EnvVars: []string{"QUEUETY_CLAIM_ALL"}, Usage: "claim every handler, burying those this binary lacks; without it they stay for PHP workers"},
		workflowsFlag(), noWorkflowsFlag("leave workflow steps and their workflows to PHP workers (the default runs the steps this binary or its PHP pool can run, as the plugin's worker does)"),
		&cli.DurationFlag{Name: "wait-sweep-interval", Value: queuety.DefaultWaitSweepInterval, EnvVars: []string{"QUEUETY_WAIT_SWEEP_INTERVAL"}, Usage: "re-evaluate workflows waiting for other workflows this often (at least 10ms; negative: off)"},
		&cli.DurationFlag{Name: "signal-poll-interval", Value: queuety.DefaultSignalPollInterval, EnvVars: []string{"QUEUETY_SIGNAL_POLL_INTERVAL"}, Usage: "look for signals other processes stored for waiting workflows this often (at least 10ms; negative: off)"},
		&cli.DurationFlag{Name: "deadline-interval", Value: queuety.DefaultDeadlineInterval, EnvVars: []string{"QUEUETY_DEADLINE_INTERVAL"}, Usage: "check workflow deadlines this often (at least 10ms; negative: off)"},
		&cli.DurationFlag{Name: "schedule-interval", Value: queuety.DefaultScheduleInterval, EnvVars: []string{"QUEUETY_SCHEDULE_INTERVAL"}, Usage: "enqueue due schedules (the plugin's schedules table) this often, as the plugin's worker does every 60s (at least 10ms; negative: off)"},
		&cli.DurationFlag{Name: "shutdown-grace", Value: queuety.DefaultShutdownGrace, EnvVars: []string{"QUEUETY_SHUTDOWN_GRACE"}, Usage: "on SIGTERM, how long running jobs may take to finish (a duration, or plain seconds like 30)"},
		&cli.DurationFlag{Name: "stale-timeout", Value: queuety.DefaultStaleTimeout, EnvVars: []string{"QUEUETY_STALE_TIMEOUT"}, Usage: "processing jobs not heard from this long are rescued (a duration, or plain seconds like 600; at least 1s)"},
		&cli.DurationFlag{Name: "heartbeat-interval", EnvVars: []string{"QUEUETY_HEARTBEAT_INTERVAL"}, DefaultText: "stale-timeout/4, at most 1m", Usage: "refresh running jobs this often (at least 100ms; 0: the default)"},
		&cli.StringFlag{Name: "rescue-schedule", Value: queuety.DefaultRescueSchedule, EnvVars: []string{"QUEUETY_RESCUE_SCHEDULE"}, Usage: "cron spec of the stale sweep, or \"off\" (any case)"},
		&cli.IntFlag{Name: "retention-days", EnvVars: []string{"QUEUETY_GO_RETENTION_DAYS"}, Usage: "turn on a sweep that deletes completed jobs older than this many `days`, the rows wp queuety purge takes (0, the default: off; the plugin never purges on its own, and its QUEUETY_RETENTION_DAYS is only the default of purge)"},
		&cli.IntFlag{Name: "log-retention-days", EnvVars: []string{"QUEUETY_GO_LOG_RETENTION_DAYS"}, Usage: "turn on a sweep that deletes log rows older than this many `days`, the rows wp queuety log purge takes (0, the default: off)"},
		&cli.IntFlag{Name: "buried-retention-days", EnvVars: []string{"QUEUETY_GO_BURIED_RETENTION_DAYS", "QUEUETY_BURIED_RETENTION_DAYS"}, Usage: "turn on a sweep that deletes buried jobs older than this many `days` (ours: the plugin keeps them; 0, the default: off)"},
		&cli.StringFlag{Name: "retention-schedule", Value: queuety.DefaultRetentionSpec, EnvVars: []string{"QUEUETY_RETENTION_SCHEDULE"}, Usage: "cron spec of the retention sweep (one daemon per database runs it at a time), or \"off\" (any case)"},
		&cli.DurationFlag{Name: "job-timeout", Value: queuety.DefaultJobTimeout, EnvVars: []string{"QUEUETY_MAX_EXECUTION_TIME"}, Usage: "default time limit of one attempt (a duration, or plain seconds like 300)"},
		&cli.StringFlag{Name: "backoff", Value: queuety.BackoffExponential, EnvVars: []string{"QUEUETY_RETRY_BACKOFF"}, Usage: "fixed, linear, exponential, or seconds like 10,30,60"},
		// Kept so existing scripts still start; see the warning in work.
		&cli.DurationFlag{Name: "claim-window", EnvVars: []string{"QUEUETY_CLAIM_WINDOW"}, Hidden: true, Usage: "no effect (claims commit before their handlers start); accepted so existing scripts start"},
		&cli.IntFlag{Name: "claim-lanes", Value: queuety.DefaultClaimLanes, EnvVars: []string{"QUEUETY_CLAIM_LANES"}, Usage: "claims kept going at once (1-64)"},
		&cli.DurationFlag{Name: "poll-interval", Value: queuety.DefaultPollInterval, EnvVars: []string{"QUEUETY_POLL_INTERVAL"}, Usage: "idle wait between claims (at least 5ms)"},
		&cli.IntFlag{Name: "max-claim-batch", Value: queuety.DefaultMaxClaimBatch, Usage: "rows one claim may take (1-10000)"},
		&cli.IntFlag{Name: "step-batch", Value: queuety.DefaultWorkflowStepBatch, EnvVars: []string{"QUEUETY_STEP_BATCH"}, Usage: "step completions one transaction may group (1-1000; 1: each step its own)"},
		&cli.IntFlag{Name: "max-for-each-items", Value: queuety.DefaultMaxForEachItems, EnvVars: []string{"QUEUETY_MAX_FOR_EACH_ITEMS"}, Usage: "fail a for_each step over more items than this, before it plans any branch (-1: no limit, as the plugin; see docs/compat.md)"},
		&cli.IntFlag{Name: "for-each-page", Value: queuety.DefaultForEachPageSize, EnvVars: []string{"QUEUETY_FOR_EACH_PAGE"}, Usage: "branch jobs of a for_each step one transaction inserts; a larger fan-out plans in pages and resumes where it stopped (see docs/robustness.md)"},
		&cli.IntFlag{Name: "chain-steps", Value: queuety.DefaultWorkflowChainSteps, EnvVars: []string{"QUEUETY_CHAIN_STEPS"}, Usage: "steps a slot may run in a row, each enqueued already claimed by the one before (1-1000, or -1: every step through the claim)"},
		&cli.IntFlag{Name: "max-conns", EnvVars: []string{"QUEUETY_MAX_CONNS"}, DefaultText: fmt.Sprintf("concurrency/4+4; with --network or --sites: %d", queuety.DefaultSitesMaxConns),
			Usage: "database connections (at least 2; 0: the default); with --network or --sites, the cap over every database server"},
		&cli.StringFlag{Name: "coordination", Value: "auto", EnvVars: []string{"QUEUETY_COORDINATION"}, Usage: "locks across daemons: auto (rows on a Galera node), named (GET_LOCK, one server) or rows (a cluster)"},
		&cli.StringFlag{Name: "claim-slices", Value: "off", EnvVars: []string{"QUEUETY_CLAIM_SLICES"}, Usage: "on a Galera cluster with every node a writer, claim this node's slice of the backlog first (on, off)"},
		&cli.StringFlag{Name: "worker-id", EnvVars: []string{"QUEUETY_WORKER_ID"}, DefaultText: "host-pid-random", Usage: "this worker's reserved_by value"},
		&cli.StringSliceFlag{Name: "capability", EnvVars: []string{"QUEUETY_CAPABILITIES"}, Usage: "a capability worker-session requirements may ask for, e.g. gpu:nvidia-l4 or fs:/mnt/models (repeatable)"},
		&cli.IntFlag{Name: "max-worker-sessions", Value: queuety.DefaultMaxWorkerSessions, EnvVars: []string{"QUEUETY_MAX_WORKER_SESSIONS"}, Usage: "worker-session leases held at once (0: none, never take session-bound jobs)"},
		&cli.DurationFlag{Name: "worker-stale-after", Value: queuety.DefaultWorkerStaleAfter, EnvVars: []string{"QUEUETY_WORKER_STALE_AFTER"}, Usage: "a worker registration not heartbeated this long is stale; its sessions become orphaned"},
		&cli.StringFlag{Name: "namespace", Value: queuety.DefaultNamespace, EnvVars: []string{"QUEUETY_NAMESPACE"}, Usage: "namespace of worker registrations and sessions"},
	}
}

// staleAfterConfig applies --worker-stale-after (work, serve), with a
// registration heartbeat well inside it.
func staleAfterConfig(c *cli.Context, cfg *queuety.Config) error {
	cfg.WorkerStaleAfter = c.Duration("worker-stale-after")
	if cfg.WorkerStaleAfter < 2*time.Second {
		return usagef("--worker-stale-after %s: must be at least 2s", cfg.WorkerStaleAfter)
	}
	cfg.RegistrationHeartbeat = min(queuety.DefaultRegistrationHeartbeat, cfg.WorkerStaleAfter/3)
	return nil
}

// workerConfig applies the worker flags to cfg.
func workerConfig(c *cli.Context, cfg *queuety.Config) (err error) {
	cfg.Queues = queuety.SplitQueues(c.String("queue"))
	if len(cfg.Queues) == 0 {
		return usagef("--queue %q: no queue named", c.String("queue"))
	}
	if err := checkWorkerFlags(c); err != nil {
		return err
	}
	cfg.Concurrency = c.Int("concurrency")
	cfg.ClaimAll = c.Bool("claim-all")
	if cfg.Workflows, err = workflowsOn(c); err != nil {
		return err
	}
	cfg.WaitSweepInterval = c.Duration("wait-sweep-interval")
	cfg.SignalPollInterval = c.Duration("signal-poll-interval")
	cfg.DeadlineInterval = c.Duration("deadline-interval")
	cfg.ScheduleInterval = c.Duration("schedule-interval")
	cfg.ShutdownGrace = c.Duration("shutdown-grace")
	cfg.StaleTimeout = c.Duration("stale-timeout")
	cfg.HeartbeatInterval = c.Duration("heartbeat-interval")
	cfg.RescueSchedule = c.String("rescue-schedule")
	cfg.RetentionDays = c.Int("retention-days")
	cfg.LogRetentionDays = c.Int("log-retention-days")
	cfg.BuriedRetentionDays = c.Int("buried-retention-days")
	cfg.RetentionSchedule = c.String("retention-schedule")
	for _, f := range []string{"retention-days", "log-retention-days", "buried-retention-days"} {
		if c.Int(f) < 0 {
			return usagef("--%s %d: must not be negative (0, the default, keeps the rows)", f, c.Int(f))
		}
	}
	if spec := strings.TrimSpace(cfg.RetentionSchedule); !strings.EqualFold(spec, "off") {
		if _, err := cron.ParseStandard(spec); err != nil {
			return usagef("--retention-schedule %q: %v (a 5-field cron spec, @hourly, @every 30m, or off)", cfg.RetentionSchedule, err)
		}
	}
	cfg.JobTimeout = c.Duration("job-timeout")
	cfg.PollInterval = c.Duration("poll-interval")
	cfg.ClaimLanes = c.Int("claim-lanes")
	cfg.MaxClaimBatch = c.Int("max-claim-batch")
	cfg.WorkflowStepBatch = c.Int("step-batch")
	cfg.WorkflowChainSteps = c.Int("chain-steps")
	cfg.MaxForEachItems = c.Int("max-for-each-items")
	if cfg.MaxForEachItems == 0 {
		return usagef("--max-for-each-items 0: give a limit, or -1 for none")
	}
	cfg.ForEachPageSize = c.Int("for-each-page")
	if cfg.ForEachPageSize < 1 {
		return usagef("--for-each-page %d: at least 1", cfg.ForEachPageSize)
	}
	cfg.MaxConns = c.Int("max-conns")
	cfg.WorkerID = c.String("worker-id")
	cfg.Coordination = c.String("coordination")
	cfg.ClaimSlices = c.String("claim-slices")
	cfg.Capabilities = c.StringSlice("capability")
	cfg.MaxWorkerSessions = c.Int("max-worker-sessions")
	switch {
	case cfg.MaxWorkerSessions < 0:
		return usagef("--max-worker-sessions %d: must be 0 or more", cfg.MaxWorkerSessions)
	case cfg.MaxWorkerSessions == 0:
		cfg.MaxWorkerSessions = -1 // the flag's 0 means "none"; Config's 0 means default
	}
	if err := staleAfterConfig(c, cfg); err != nil {
		return err
	}
	cfg.Namespace = c.String("namespace")
	b, err := queuety.ParseBackoff(c.String("backoff"))
	if err != nil {
		return usagef("--backoff: %v", err)
	}
	cfg.Backoff = b
	return limitsConfig(c, cfg)
}

func (a *app) workCommand() *cli.Command {
	return &cli.Command{
		Name:  "work",
		Usage: "claim and run jobs until SIGTERM",
		Description: `Runs the Go handlers compiled into this binary (the stock binary has only the
built-ins queuety.noop, queuety.sleep and queuety.fail). Jobs whose handler it
lacks stay in the queue for PHP workers, unless --claim-all buries them.
Workflow steps run too, as in the plugin's worker (--no-workflows: leave them
to PHP workers). With --wp-config, the site's QUEUETY_* settings apply
(QUEUETY_STALE_TIMEOUT, QUEUETY_MAX_EXECUTION_TIME, QUEUETY_RETRY_BACKOFF...);
flags and environment variables win, and the start-up log says where each
setting came from.

   queuety work --queue critical,default --concurrency 50
   queuety work --wp-config /var/www/html/wp-config.php --stale-timeout 10m

With --php, handlers without a Go implementation run in a pool of long-lived
PHP processes (php-bridge/bin/queuety-php-worker) that load your application
once; the worker then claims every handler, and workflow steps whose class
has no Go step handler run there too (Step::handle, or
ForEachHandler::handle_item for a for_each branch):

   queuety work --php "php php-bridge/bin/queuety-php-worker --bootstrap app.php" --php-workers 4

The --php command is split like a shell would (quotes and backslashes), but
nothing is expanded. A crashed PHP process fails its job and is replaced; one
whose job runs past its time limit is killed and replaced; each is recycled
after --php-max-jobs jobs or above --php-max-memory MiB. If PHP processes keep
crashing (10 within a minute) the pool gives up and the command exits 1.

Every worker registers itself (worker list). Jobs bound to a worker session
run only on a worker serving the session's queue whose --capability strings
cover its requirements; a graceful stop closes the sessions it holds:

   queuety work --queue default,gpu-activities --capability gpu:nvidia-l4

For system cron: --once (one job), --max-jobs N, --max-time D and
--stop-when-empty exit 0 when reached (queuety flush is work
--stop-when-empty), printing what ran (--json for scripts):

   * * * * * queuety work --wp-config /var/www/html/wp-config.php --once

With --http, the HTTP API of queuety serve runs beside the worker (tokens from
QUEUETY_WORKER_TOKEN and QUEUETY_OPERATOR_TOKEN), with Prometheus metrics at
GET /metrics (operator token) and GET /healthz, GET /readyz (no token), and the
web dashboard at /ui/ (log in with the operator token).
--metrics-listen serves /metrics, /healthz and /readyz alone, without a token
(a bare port binds 127.0.0.1):

   queuety work --metrics-listen 9090

SIGTERM or SIGINT: stop claiming, let running jobs finish within
--shutdown-grace, hand the rest back to pending, close the worker's sessions,
stop the PHP processes, exit 0. A second SIGTERM or SIGINT during that stop
forces it: running jobs are cancelled at once and handed back to pending,
pending completions are written, and work exits 1.`,
		Flags: append(append(append(append(append(workerFlags(), webhookFlags()...), limitFlags()...), phpFlags()...), append(httpAPIFlags(),
			&cli.StringFlag{Name: "http", EnvVars: []string{"QUEUETY_HTTP"}, Usage: "also serve the HTTP API (as queuety serve does) on this `address`, e.g. 127.0.0.1:8080"},
			metricsListenFlag(), startupWaitFlag(), debugFlag())...), append(append(runLimitFlags(), pluginWorkerFlags()...), sitesFlags()...)...),
		Action: func(c *cli.Context) error {
			if err := applyPluginWorkers(c); err != nil {
				return err
			}
			many, err := sitesMode(c)
			if err != nil {
				return err
			}
			httpAddr := c.String("http")
			if httpAddr != "" {
				if err := checkHTTPAuth(c, httpAddr); err != nil {
					return err
				}
			}
			cfg, err := baseConfig(c)
			if err != nil {
				return err
			}
			site, err := applySiteSettings(c)
			if err != nil {
				return err
			}
			if err := workerConfig(c, &cfg); err != nil {
				return site.explain(err)
			}
			if err := webhookConfig(c, &cfg); err != nil {
				return err
			}
			cfg.Debug = c.Bool("debug")
			if err := site.apply(&cfg); err != nil {
				return err
			}
			limits, err := readRunLimits(c, &cfg)
			if err != nil {
				return err
			}
			logSettings(cfg.Logger, c, site)
			if c.IsSet("claim-window") {
				cfg.Logger.Warn("--claim-window (QUEUETY_CLAIM_WINDOW) has no effect any more: a claim commits before its handlers start, so a rolled-back claim never runs a job twice")
			}
			if many {
				// Each site's own PHP pool (work_sites.go), not one for all.
				return a.workSites(c, cfg, limits)
			}
			phpCfg, usePHP, err := phpPoolConfig(c)
			if err != nil {
				return site.explain(err)
			}
			if usePHP {
				cfg.Concurrency = phpConcurrency(c, cfg.Concurrency, phpCfg.Workers)
				cfg.MaxConns = phpMaxConns(c, cfg.MaxConns, phpCfg.Workers)
			}
			wait, err := startupWait(c)
			if err != nil {
				return err
			}
			if limits.maxTime > 0 {
				// --once and cron runs wait for the database within their
				// time limit only.
				wait = min(wait, limits.maxTime)
			}
			// Metrics are counted only when something serves them.
			var obs *observability
			if httpAddr != "" || c.String("metrics-listen") != "" {
				if obs, err = newObservability(c, &cfg, true); err != nil {
					return err
				}
				// The metrics listener is up before the database is, so
				// /readyz answers "not ready" while the start waits for it.
				if err := obs.startListener(c.Context, c.App.ErrWriter, "work"); err != nil {
					return err
				}
				defer obs.stopListener()
			}
			client, err := openWaiting(c, cfg, wait)
			if err != nil {
				return err
			}
			defer client.Close()
			var pool *phppool.Pool
			if usePHP {
				if pool, err = startPHPPool(c.Context, phpCfg, cfg.Logger); err != nil {
					return err
				}
				defer stopPHPPool(pool)
				a.reg.SetFallback(pool)
				if obs != nil {
					obs.pool.set(pool)
				}
			} else if cfg.Workflows {
				cfg.Logger.Info("without --php, workflows whose cancel, deadline or failure would call PHP compensations, on_cancel or on_deadline classes are left to PHP workers (a debug log row names them)")
			}
			w, err := client.NewWorker(a.reg)
			if err != nil {
				return usageError{err}
			}
			if obs != nil {
				obs.attach(client, w)
			}
			ctx, force, stop := twoSignals(c.Context, cfg.Logger)
			defer stop()
			var why stopReason
			ctx, stopLimits := limits.watch(ctx, w, &why)
			defer stopLimits()
			var srv *httpapi.Server
			if httpAddr != "" {
				ui, err := newDashboard(c, client, a.reg, pool, w)
				if err != nil {
					return err
				}
				if srv, err = newHTTPServer(c, client, httpAddr, obs, ui); err != nil {
					return err
				}
			}
			if err := runWorker(ctx, force, w, pool, srv, obs, cfg.Logger, c.App.ErrWriter); err != nil {
				return err
			}
			if force.Err() != nil {
				return errForcedStop
			}
			if limits.any() || c.Bool("json") {
				return printRunSummary(c, w, &why)
			}
			return nil
		},
	}
}

// phpSlotsPerProcess is the slots `work --php` gives each PHP process
// when --concurrency is not set. Measured with `bench php-workflows
// --count 3000` (3 PHP steps, 4 processes, alternated in one run): 16 a
// process ran 1,248-1,432 steps/s, 50 1,936-2,188, 100 2,364-2,871, 200
// 2,920-3,197. The pool runs 4 steps at a time whatever the slots; what
// the slots buy is grouping: claims take many rows in one statement and
// the step completions of many slots share one commit, so the server's
// CPU per step falls from about 650 µs to 300 µs. A slot waiting for a
// free process does not spend its job's time limit
// (workflow/time_limit.go); its row stays processing, heartbeated, which
// is the price: another worker (a PHP worker of the plugin beside this
// one) cannot take those rows, and after a crash they wait for the stale
// timeout. --concurrency sets fewer.
const phpSlotsPerProcess = 200

// phpConnsPerProcess caps the database connections of those slots when
// --max-conns is not set: they wait for PHP, not for the database, and
// concurrency/4+4 (204 for 800 slots) would pass MariaDB's default
// max_connections (151) and take the site's own connections.
const phpConnsPerProcess = 4

// phpConcurrency is the slots with a PHP pool of workers processes:
// --concurrency when given, else at least phpSlotsPerProcess a process.
func phpConcurrency(c *cli.Context, concurrency, workers int) int {
	if c.IsSet("concurrency") {
		return concurrency
	}
	return max(concurrency, phpSlotsPerProcess*workers)
}

// phpMaxConns is the connections with a PHP pool: --max-conns when given
// (or --concurrency, whose default applies), else phpConnsPerProcess a
// process and 4 for the claims and completions.
func phpMaxConns(c *cli.Context, maxConns, workers int) int {
	if c.IsSet("max-conns") || c.IsSet("concurrency") {
		return maxConns
	}
	return phpConnsPerProcess*workers + 4
}

// phpFlags configure the PHP handler pool (work, bench).
func phpFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "php", EnvVars: []string{"QUEUETY_PHP"}, Usage: "run handlers without a Go implementation in PHP processes started by this `command`, e.g. \"php php-bridge/bin/queuety-php-worker --bootstrap app.php\""},
		&cli.IntFlag{Name: "php-workers", Value: 4, EnvVars: []string{"QUEUETY_PHP_WORKERS"}, Usage: "PHP processes in the pool"},
		&cli.IntFlag{Name: "php-max-jobs", Value: phppool.DefaultMaxJobs, EnvVars: []string{"QUEUETY_PHP_MAX_JOBS"}, Usage: "recycle a PHP process after this many jobs"},
		&cli.IntFlag{Name: "php-max-memory", Value: phppool.DefaultMaxMemoryMB, EnvVars: []string{"QUEUETY_PHP_MAX_MEMORY"}, Usage: "recycle a PHP process using more than this many MiB after a job"},
		&cli.IntFlag{Name: "php-memory-limit", Value: phppool.DefaultMemoryLimitMB, EnvVars: []string{"QUEUETY_PHP_MEMORY_LIMIT"}, Usage: "kill a PHP process whose resident memory passes this many MiB while it runs a job, and fail the job (Linux; 0: no limit)"},
	}
}

// phpPoolConfig reads the PHP flags; ok is false without --php.
func phpPoolConfig(c *cli.Context) (cfg phppool.Config, ok bool, err error) {
	if c.String("php") == "" {
		return cfg, false, nil
	}
	cmd, err := phppool.SplitCommand(c.String("php"))
	if err != nil {
		return cfg, false, usagef("--php: %v", err)
	}
	for _, f := range []string{"php-workers", "php-max-jobs", "php-max-memory"} {
		if c.Int(f) < 1 {
			return cfg, false, usagef("--%s %d: must be at least 1", f, c.Int(f))
		}
	}
	limit := c.Int("php-memory-limit")
	switch {
	case limit < 0:
		return cfg, false, usagef("--php-memory-limit %d: must not be negative (0: no limit)", limit)
	case limit == 0:
		limit = -1 // phppool: no limit
	case limit < c.Int("php-max-memory") && !c.IsSet("php-memory-limit"):
		// A recycle threshold set above the default kill limit (an
		// existing configuration) moves the limit up with it.
		limit = 2 * c.Int("php-max-memory")
	case limit < c.Int("php-max-memory"):
		return cfg, false, usagef("--php-memory-limit %d is below --php-max-memory %d: a process would be killed before it could be recycled", limit, c.Int("php-max-memory"))
	}
	return phppool.Config{
		Command: cmd, Workers: c.Int("php-workers"),
		MaxJobs: c.Int("php-max-jobs"), MaxMemoryMB: c.Int("php-max-memory"), MemoryLimitMB: limit,
	}, true, nil
}

func startPHPPool(ctx context.Context, cfg phppool.Config, logger *slog.Logger) (*phppool.Pool, error) {
	pool, err := phppool.New(cfg, logger)
	if err != nil {
		return nil, usageError{err}
	}
	if err := pool.Start(ctx); err != nil {
		return nil, fmt.Errorf("--php: %w", err)
	}
	return pool, nil
}

// stopPHPPool ends the PHP processes once the worker has stopped, so no
// job is still using them; the bound only matters for a process that
// ignores its closed stdin.
func stopPHPPool(pool *phppool.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*phppool.DefaultStopGrace)
	defer cancel()
	_ = pool.Stop(ctx)
}

// errForcedStop is work's error (exit 1) after a second signal.
var errForcedStop = errors.New("stop forced by a second signal: running jobs were cancelled and handed back")

// twoSignals: ctx ends at the first SIGTERM or SIGINT (a graceful stop),
// force at the second (cancel running jobs now). stop stops listening.
func twoSignals(parent context.Context, log *slog.Logger) (ctx, force context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithCancel(parent)
	force, forceNow := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			log.Info("stopping: running jobs may finish within the shutdown grace; a second signal forces the stop", "signal", s.String())
			cancel()
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			log.Warn("second signal: forcing the stop, cancelling running jobs", "signal", s.String())
			forceNow()
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, force, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
			forceNow()
		})
	}
}

// runWorker runs w until ctx ends or the PHP pool gives up; the latter is
// an error, so a supervisor restarts the daemon instead of it idling. srv,
// when set (work --http), serves the HTTP API while the worker runs: it
// starts once the worker is registered and stops before the worker does.
// force, when it ends during the stop, cuts the shutdown grace short.
func runWorker(ctx, force context.Context, w *queuety.Worker, pool *phppool.Pool, srv *httpapi.Server, obs *observability, log *slog.Logger, stderr io.Writer) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	if srv != nil {
		if err := srv.Start(ctx); err != nil {
			_ = w.Stop(context.Background())
			return err
		}
		fmt.Fprintf(stderr, "queuety work: HTTP API on http://%s\n", srv.Addr())
	}
	var gaveUp <-chan struct{}
	if pool != nil {
		gaveUp = pool.GaveUp()
	}
	stopNotify := notifyReady(ctx, log, w.Ready)
	select {
	case <-ctx.Done():
	case <-gaveUp:
	}
	stopNotify()
	if srv != nil {
		sctx, cancel := context.WithTimeout(force, httpShutdownWait)
		_ = srv.Stop(sctx)
		cancel()
	}
	// The metrics listener outlives the worker's stop, so /readyz says
	// "not ready" while running jobs finish.
	err := w.Stop(force)
	obs.stopListener()
	if err != nil {
		return err
	}
	if pool != nil {
		return pool.Err()
	}
	return nil
}

// openLocal is how dev and bench start: create the database if missing,
// connect, check that tool may use the tables (checkScratch: force accepts
// rows tool did not write), migrate, and mark them as tool's when they
// were empty.
func openLocal(c *cli.Context, cfg queuety.Config, tool string, force bool) (*queuety.Client, queuety.MigrateReport, error) {
	if err := ensureDatabase(c.Context, cfg.DSN); err != nil {
		return nil, queuety.MigrateReport{}, err
	}
	client, err := open(c, cfg)
	if err != nil {
		return nil, queuety.MigrateReport{}, err
	}
	rep, err := migrateScratch(c, client, tool, force)
	if err != nil {
		client.Close()
		return nil, rep, err
	}
	return client, rep, nil
}

// migrateScratch is openLocal's part after connecting: the check comes
// before the migration, so a refused database is left as it was.
func migrateScratch(c *cli.Context, client *queuety.Client, tool string, force bool) (queuety.MigrateReport, error) {
	st := clientstore.Of(client)
	marked, err := checkScratch(c.Context, st, tool)
	var fr errForeignRows
	foreign := errors.As(err, &fr)
	if err != nil && !(foreign && force) {
		return queuety.MigrateReport{}, err
	}
	rep, err := client.Migrate(c.Context)
	if err != nil || marked || foreign {
		return rep, err
	}
	return rep, st.MarkScratch(c.Context, tool)
}

// ensureDatabase creates the DSN's database when it is missing (dev, bench).
func ensureDatabase(ctx context.Context, dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return usagef("--dsn: %v", err)
	}
	name := cfg.DBName
	if name == "" {
		return usagef("--dsn names no database")
	}
	cfg.DBName = ""
	db, err := sqlx.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := store.CreateDatabase(ctx, db, name); err != nil {
		return fmt.Errorf("creating database %s: %w (is MariaDB running? start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd)", name, err)
	}
	return nil
}

func notifyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
