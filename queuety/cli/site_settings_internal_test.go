package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

const siteDefinesPHP = `<?php
define('DB_NAME', 'site'); define('DB_USER', 'root'); define('DB_HOST', '127.0.0.1');
define('QUEUETY_STALE_TIMEOUT', 3600);
define('QUEUETY_MAX_EXECUTION_TIME', 900);
define('QUEUETY_RETRY_BACKOFF', 'linear');
define('QUEUETY_RETENTION_DAYS', 30);
define('QUEUETY_LOG_RETENTION_DAYS', 14);
define('QUEUETY_WORKER_SLEEP', 2);
define('QUEUETY_WORKER_MAX_JOBS', 250);
define('QUEUETY_WORKER_MAX_MEMORY', 256);
define('QUEUETY_CACHE_TTL', 10);
define('QUEUETY_DEBUG', true);
define('QUEUETY_RESOURCE_ADMISSION', false);
define('QUEUETY_RESOURCE_PROFILE_WINDOW_MINUTES', 0);
define('QUEUETY_RESOURCE_PROFILE_TTL', 45);
define('QUEUETY_RESOURCE_MEMORY_HEADROOM_MB', 0);
define('QUEUETY_RESOURCE_SYSTEM_MEMORY_AWARENESS', 0);
define('QUEUETY_RESOURCE_SYSTEM_MEMORY_HEADROOM_MB', 64);
define('QUEUETY_RESOURCE_QUEUE_COST_BUDGETS', array('default' => 20, ' reports ' => '5', '' => 3, 'zero' => 0));
define('QUEUETY_RESOURCE_GROUP_COST_BUDGETS', ['llm' => 4]);
define('QUEUETY_RESOURCE_TIME_HEADROOM_MS', 2500);
define('QUEUETY_WORKER_POOL_SCALE_INTERVAL', 9);
`

// siteConfigOf runs `work` as Main does, with the settings read the way
// the work command reads them, and returns the Config and the log.
func siteConfigOf(t *testing.T, php string, args ...string) (queuety.Config, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte(php), 0o600))
	var cfg queuety.Config
	var logs bytes.Buffer
	app := &ucli.App{Flags: globalFlags(), Commands: []*ucli.Command{{
		Name: "work", Flags: append(append(append(workerFlags(), limitFlags()...), phpFlags()...), debugFlag()),
		Action: func(c *ucli.Context) error {
			var err error
			if cfg, err = baseConfig(c); err != nil {
				return err
			}
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			site, err := applySiteSettings(c)
			if err != nil {
				return err
			}
			if err := workerConfig(c, &cfg); err != nil {
				return site.explain(err)
			}
			cfg.Debug = c.Bool("debug")
			if err := site.apply(&cfg); err != nil {
				return err
			}
			if _, _, err := phpPoolConfig(c); err != nil {
				return site.explain(err)
			}
			logSettings(cfg.Logger, c, site)
			return cfg.Validate()
		},
	}}}
	argv := normalizeArgs(app, append([]string{"queuety", "--wp-config", path, "work"}, args...))
	app.Metadata = map[string]any{argsKey: argv}
	err := app.Run(argv)
	return cfg, logs.String(), err
}

// Every QUEUETY_* constant of the plugin's Config.php is read from
// wp-config with the plugin's casts and floors, and work logs where each
// came from.
func TestSiteSettingsFromWPConfig(t *testing.T) {
	cfg, logs, err := siteConfigOf(t, siteDefinesPHP)
	require.NoError(t, err)
	require.Equal(t, time.Hour, cfg.StaleTimeout)
	require.Equal(t, 15*time.Minute, cfg.JobTimeout)
	require.Equal(t, queuety.Backoff{Strategy: queuety.BackoffLinear}, cfg.Backoff)
	require.Zero(t, cfg.RetentionDays, "QUEUETY_RETENTION_DAYS is only purge's default: work sweeps nothing")
	require.Zero(t, cfg.LogRetentionDays, "QUEUETY_LOG_RETENTION_DAYS is only log purge's default")
	require.Empty(t, queuety.RetentionPolicyOf(cfg))
	require.Contains(t, logs, `msg="wp-config setting not used" why="QUEUETY_RETENTION_DAYS: only the default of`)
	require.Equal(t, 2*time.Second, cfg.PollInterval)
	require.Equal(t, 10*time.Second, cfg.PauseCacheTTL)
	require.True(t, cfg.Debug)
	require.True(t, cfg.ResourceAdmissionOff)
	require.Equal(t, time.Minute, cfg.ProfileWindow(), "max(1, 0) minutes")
	require.Equal(t, 45*time.Second, cfg.ProfileTTL())
	require.Equal(t, 0, cfg.MemoryHeadroomMB(), "0 is none, not the default")
	require.True(t, cfg.SystemMemoryAwarenessOff)
	require.Equal(t, 64, cfg.SystemHeadroomMB())
	require.Equal(t, map[string]int64{"default": 20, "reports": 5}, cfg.QueueCostBudgets)
	require.Equal(t, map[string]int64{"llm": 4}, cfg.GroupCostBudgets)
	require.Equal(t, 2500*time.Millisecond, cfg.TimeHeadroom())
	require.Contains(t, logs, `msg=setting name=--stale-timeout value=3600s from="wp-config QUEUETY_STALE_TIMEOUT (line 3)"`)
	require.Contains(t, logs, `name=--php-max-jobs value=250 from="wp-config QUEUETY_WORKER_MAX_JOBS (line 9)"`)
	require.Contains(t, logs, `name=--queue-cost-budgets value="default=20,reports=5" from="wp-config QUEUETY_RESOURCE_QUEUE_COST_BUDGETS (line 19)"`, "entries the plugin drops are dropped")
	require.Contains(t, logs, `msg="wp-config setting not used" why="QUEUETY_WORKER_POOL_SCALE_INTERVAL: the daemon scales goroutines`)
	require.NotContains(t, logs, "name=--dsn", "the DSN came from wp-config, not a flag")
}

// A flag beats the environment, which beats the define, which beats the
// default; the log names each source.
func TestSiteSettingsPrecedence(t *testing.T) {
	t.Setenv("QUEUETY_MAX_EXECUTION_TIME", "120")
	t.Setenv("QUEUETY_RETRY_BACKOFF", "fixed")
	t.Setenv("QUEUETY_RESOURCE_QUEUE_COST_BUDGETS", "default=7")
	t.Setenv("QUEUETY_DEBUG", "false")
	phpSecondsEnv()
	cfg, logs, err := siteConfigOf(t, siteDefinesPHP, "--stale-timeout", "20m", "--backoff", "10,20")
	require.NoError(t, err)
	require.Equal(t, 20*time.Minute, cfg.StaleTimeout, "flag over define")
	require.Equal(t, queuety.Backoff{List: []int{10, 20}}, cfg.Backoff, "flag over env and define")
	require.Equal(t, 2*time.Minute, cfg.JobTimeout, "env over define")
	require.False(t, cfg.Debug, "env over define")
	require.Equal(t, map[string]int64{"default": 7}, cfg.QueueCostBudgets, "env over define")
	require.Zero(t, cfg.RetentionDays, "the define does not turn the sweep on")
	require.Contains(t, logs, "name=--stale-timeout value=20m0s from=flag")
	require.Contains(t, logs, "name=--backoff value=10,20 from=flag", "flag and env both set: the flag")
	require.Contains(t, logs, `name=--job-timeout value=2m0s from="env QUEUETY_MAX_EXECUTION_TIME"`)
	require.Contains(t, logs, `name=--queue-cost-budgets value="default=7" from="env QUEUETY_RESOURCE_QUEUE_COST_BUDGETS"`)
}

// A define the daemon cannot take is refused with the define's name and
// line, though the message is the flag's; PHP's own casts still apply
// (an unknown backoff is exponential, 0 execution time is no limit).
func TestSiteSettingsBadDefines(t *testing.T) {
	t.Parallel()
	head := "<?php define('DB_NAME', 'site'); define('DB_USER', 'root'); define('DB_HOST', 'h');\n"
	_, _, err := siteConfigOf(t, head+"define('QUEUETY_STALE_TIMEOUT', 0);\n")
	require.EqualError(t, err, "--stale-timeout 0s: must be at least 1s (reserved_at has one-second resolution) (set by wp-config's QUEUETY_STALE_TIMEOUT (line 2))")
	_, _, err = siteConfigOf(t, head+"define('QUEUETY_WORKER_MAX_JOBS', -3);\n", "--php", "php worker.php")
	require.ErrorContains(t, err, "--php-max-jobs -3: must be at least 1 (set by wp-config's QUEUETY_WORKER_MAX_JOBS (line 2))")
	_, _, err = siteConfigOf(t, head+"define('QUEUETY_STALE_TIMEOUT', [1]);\n")
	require.EqualError(t, err, "wp-config's QUEUETY_STALE_TIMEOUT (line 2): want a number of seconds, not an array")
	cfg, _, err := siteConfigOf(t, head+"define('QUEUETY_RETRY_BACKOFF', 'sometimes'); define('QUEUETY_MAX_EXECUTION_TIME', 0);\n")
	require.NoError(t, err)
	require.Equal(t, queuety.Backoff{Strategy: queuety.BackoffExponential}, cfg.Backoff)
	require.Equal(t, 8760*time.Hour, cfg.JobTimeout)
}
