package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// listedSitesOf reads a sites file of lines as `work --sites` does, after
// the command's flags (args) are read as work reads them, and returns the
// sites by name and the log.
func listedSitesOf(t *testing.T, lines []string, args ...string) (map[string]queuety.Site, string) {
	t.Helper()
	list := filepath.Join(t.TempDir(), "sites.txt")
	require.NoError(t, os.WriteFile(list, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	var sites []queuety.Site
	var logs bytes.Buffer
	app := &ucli.App{Flags: globalFlags(), Commands: []*ucli.Command{{
		Name:  "work",
		Flags: append(append(append(append(append(workerFlags(), limitFlags()...), phpFlags()...), debugFlag()), runLimitFlags()...), sitesFlags()...),
		Action: func(c *ucli.Context) error {
			cfg, err := baseConfig(c)
			if err != nil {
				return err
			}
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			site, err := applySiteSettings(c)
			if err != nil {
				return err
			}
			if err := workerConfig(c, &cfg); err != nil {
				return err
			}
			cfg.Debug = c.Bool("debug")
			if err := site.apply(&cfg); err != nil {
				return err
			}
			sites, err = listedSites(c.Context, c.String("sites"), cfg, newSiteSettingsReader(c, cfg.Logger))
			return err
		},
	}}}
	argv := normalizeArgs(app, append([]string{"queuety", "work", "--sites", list}, args...))
	app.Metadata = map[string]any{argsKey: argv}
	require.NoError(t, app.Run(argv))
	out := map[string]queuety.Site{}
	for _, s := range sites {
		out[s.Name] = s
	}
	return out, logs.String()
}

func writeSiteConfig(t *testing.T, php string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte(php), 0o600))
	return path
}

// Each listed site takes its own wp-config's QUEUETY_* settings, read with
// the plugin's casts as for one site; a site without defines keeps the
// command's; the settings that stay the command's with many sites are
// named in the log with why.
func TestSitesOwnSettingsFromWPConfig(t *testing.T) {
	t.Parallel()
	own := writeSiteConfig(t, siteDefinesPHP)
	plain := writeSiteConfig(t, "<?php define('DB_NAME', 'other'); define('DB_USER', 'root'); define('DB_HOST', '127.0.0.1');\n")
	sites, logs := listedSitesOf(t, []string{own, plain})
	require.Len(t, sites, 2)
	cfg := sites[own].Config
	require.NoError(t, sites[own].Err)
	require.Equal(t, time.Hour, cfg.StaleTimeout)
	require.Equal(t, 15*time.Minute, cfg.JobTimeout)
	require.Equal(t, queuety.Backoff{Strategy: queuety.BackoffLinear}, cfg.Backoff)
	require.Equal(t, 10*time.Second, cfg.PauseCacheTTL)
	require.True(t, cfg.Debug)
	require.True(t, cfg.ResourceAdmissionOff)
	require.Equal(t, map[string]int64{"default": 20, "reports": 5}, cfg.QueueCostBudgets)
	require.Equal(t, map[string]int64{"llm": 4}, cfg.GroupCostBudgets)
	require.Equal(t, 2500*time.Millisecond, cfg.TimeHeadroom())
	require.Equal(t, queuety.DefaultPollInterval, cfg.PollInterval, "QUEUETY_WORKER_SLEEP is not a site's own with many sites")
	require.Zero(t, cfg.RetentionDays, "QUEUETY_RETENTION_DAYS is only purge's default")
	require.Equal(t, "site", mustDSNName(t, cfg.DSN))

	other := sites[plain].Config
	require.NoError(t, sites[plain].Err)
	require.Equal(t, queuety.DefaultStaleTimeout, other.StaleTimeout, "the command's")
	require.Equal(t, queuety.DefaultJobTimeout, other.JobTimeout)
	require.False(t, other.Debug)
	require.Nil(t, other.QueueCostBudgets)

	require.Contains(t, logs, `msg="site settings" site=`+own+` applied="QUEUETY_STALE_TIMEOUT=3600 (wp-config line 3), QUEUETY_MAX_EXECUTION_TIME=900 (wp-config line 4), QUEUETY_RETRY_BACKOFF=linear (wp-config line 5)`)
	require.Contains(t, logs, "QUEUETY_WORKER_SLEEP (wp-config line 8): with many sites --poll-interval paces one look")
	require.Contains(t, logs, "QUEUETY_RETENTION_DAYS (wp-config line 6): only the default of `queuety purge`")
	require.NotContains(t, logs, "site="+plain, "a site with nothing of its own logs nothing")
}

func mustDSNName(t *testing.T, dsn string) string {
	t.Helper()
	_, name, ok := strings.Cut(dsn, ")/")
	require.True(t, ok, dsn)
	name, _, _ = strings.Cut(name, "?")
	return name
}

// The precedence of one site, per site: the command's flag or environment
// variable, then the site's line words, then its wp-config's defines.
// t.Setenv forbids t.Parallel.
func TestSitesOwnSettingsPrecedence(t *testing.T) {
	t.Setenv("QUEUETY_CACHE_TTL", "3")
	own := writeSiteConfig(t, siteDefinesPHP)
	dsnLine := "root@tcp(127.0.0.1:3306)/shop wp_ QUEUETY_STALE_TIMEOUT=120 QUEUETY_DEBUG=true QUEUETY_RESOURCE_QUEUE_COST_BUDGETS=default=3,llm=1"
	sites, logs := listedSitesOf(t, []string{own + " QUEUETY_RETRY_BACKOFF=fixed QUEUETY_MAX_EXECUTION_TIME=0", dsnLine}, "--stale-timeout", "20m")
	cfg := sites[own].Config
	require.NoError(t, sites[own].Err)
	require.Equal(t, 20*time.Minute, cfg.StaleTimeout, "the command's flag over the define")
	require.Equal(t, 3*time.Second, cfg.PauseCacheTTL, "the command's environment over the define")
	require.Equal(t, queuety.Backoff{Strategy: queuety.BackoffFixed}, cfg.Backoff, "the line's word over the define")
	require.Equal(t, 8760*time.Hour, cfg.JobTimeout, "0 is no limit, as in the plugin")
	require.Contains(t, logs, "QUEUETY_STALE_TIMEOUT (wp-config line 3): the command's --stale-timeout wins")
	require.Contains(t, logs, "QUEUETY_CACHE_TTL (wp-config line 11): the command's env QUEUETY_CACHE_TTL wins")
	require.Contains(t, logs, "QUEUETY_RETRY_BACKOFF=fixed (sites line)")

	shop := sites["root@tcp(127.0.0.1:3306)/shop wp_"]
	require.NoError(t, shop.Err)
	require.Equal(t, 20*time.Minute, shop.Config.StaleTimeout, "the flag over the line too")
	require.True(t, shop.Config.Debug)
	require.Equal(t, map[string]int64{"default": 3, "llm": 1}, shop.Config.QueueCostBudgets)
}

// A setting the daemon cannot take makes the site's Err, naming the
// constant, where it is and why; the other sites are listed as usual.
func TestSitesOwnSettingsRefused(t *testing.T) {
	t.Parallel()
	head := "<?php define('DB_NAME', 'site'); define('DB_USER', 'root'); define('DB_HOST', 'h');\n"
	zero := writeSiteConfig(t, head+"define('QUEUETY_STALE_TIMEOUT', 0);\n")
	array := writeSiteConfig(t, head+"define('QUEUETY_MAX_EXECUTION_TIME', [1]);\n")
	short := writeSiteConfig(t, head+"define('QUEUETY_STALE_TIMEOUT', 20);\n")
	fine := writeSiteConfig(t, head)
	sites, _ := listedSitesOf(t, []string{zero, array, short, fine, fine + " QUEUETY_NO_SUCH=1", "u@tcp(h)/db wp_ QUEUETY_DEBUG=1 stray"},
		"--heartbeat-interval", "30s")
	require.EqualError(t, sites[zero].Err, "QUEUETY_STALE_TIMEOUT (wp-config line 2) 0: must be at least 1 second (reserved_at has one-second resolution)")
	require.EqualError(t, sites[array].Err, "QUEUETY_MAX_EXECUTION_TIME (wp-config line 2): want a number of seconds, not an array")
	require.ErrorContains(t, sites[short].Err, "heartbeat interval 30s: must be shorter than the stale timeout 20s")
	require.ErrorContains(t, sites[fine].Err, "sites line: QUEUETY_NO_SUCH: not a setting the plugin reads", "the last line of a site wins")
	require.ErrorContains(t, sites["u@tcp(h)/db wp_"].Err, `sites line: "stray": after the first QUEUETY_X=value word, every word is one`)
	require.Equal(t, "site", mustDSNName(t, sites[zero].Config.DSN), "a refused site still has its database, for status")
}
