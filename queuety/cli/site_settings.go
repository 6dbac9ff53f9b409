package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/wpconfig"
	"github.com/queuety-go/queuety/queuety"
)

// The plugin reads its settings from QUEUETY_* constants a site defines in
// wp-config.php (src/Config.php). A daemon pointed at that wp-config must
// use the same values, or its stale sweep rescues PHP workers' long jobs
// after its own 10 minutes and they run twice. Precedence: a flag, then
// the environment, then the wp-config define, then the default.

// siteSetting is one plugin constant.
type siteSetting struct {
	define string
	// flag is the command flag the define feeds; the define is used only
	// when neither the flag nor its environment variable is set.
	flag string
	// toFlag turns the constant into the flag's text.
	toFlag func(wpconfig.Constant) (string, error)
	// toConfig applies the constant (or the environment variable named
	// define) when the command has no such flag.
	toConfig func(*queuety.Config, wpconfig.Constant) error
	// none says why the daemon has no use for the setting ("" : it has).
	none string
}

func seconds(c wpconfig.Constant) (string, error) {
	n, ok := c.Int()
	if !ok {
		return "", fmt.Errorf("want a number of seconds, not an array")
	}
	return fmt.Sprintf("%ds", n), nil
}

func integer(c wpconfig.Constant) (string, error) {
	n, ok := c.Int()
	if !ok {
		return "", fmt.Errorf("want an integer, not an array")
	}
	return strconv.FormatInt(n, 10), nil
}

// backoffName is Config::retry_backoff: BackoffStrategy::tryFrom, and
// exponential for anything else.
func backoffName(c wpconfig.Constant) (string, error) {
	switch c.Text {
	case queuety.BackoffFixed, queuety.BackoffLinear, queuety.BackoffExponential:
		return c.Text, nil
	}
	return queuety.BackoffExponential, nil
}

func boolText(c wpconfig.Constant) (string, error) { return strconv.FormatBool(c.Bool()), nil }

func intField(dst func(*queuety.Config) *int) func(*queuety.Config, wpconfig.Constant) error {
	return func(cfg *queuety.Config, c wpconfig.Constant) error {
		n, ok := c.Int()
		if !ok {
			return fmt.Errorf("want an integer, not an array")
		}
		*dst(cfg) = int(n)
		return nil
	}
}

// durField sets a duration of unit*n, at least floor units (the plugin's
// max(1, ...) for the profile window and TTL); a value meaning "none"
// (0 where the plugin allows it) is stored negative.
func durField(dst func(*queuety.Config) *time.Duration, unit time.Duration, floor int64) func(*queuety.Config, wpconfig.Constant) error {
	return func(cfg *queuety.Config, c wpconfig.Constant) error {
		n, ok := c.Int()
		if !ok {
			return fmt.Errorf("want an integer, not an array")
		}
		n = max(n, floor)
		if n == 0 {
			*dst(cfg) = -1 // none, not the default
			return nil
		}
		*dst(cfg) = time.Duration(n) * unit
		return nil
	}
}

// headroomField is a max(0, n) megabyte setting, 0 stored as "none".
func headroomField(dst func(*queuety.Config) *int) func(*queuety.Config, wpconfig.Constant) error {
	return func(cfg *queuety.Config, c wpconfig.Constant) error {
		n, ok := c.Int()
		if !ok {
			return fmt.Errorf("want an integer, not an array")
		}
		if n <= 0 {
			*dst(cfg) = -1
			return nil
		}
		*dst(cfg) = int(n)
		return nil
	}
}

// budgets is Config::normalize_int_map_constant: names trimmed, empty
// names and limits below 1 dropped; a non-array is no budgets. From the
// environment it takes a JSON object or name=limit pairs.
func budgets(dst func(*queuety.Config) *map[string]int64) func(*queuety.Config, wpconfig.Constant) error {
	return func(cfg *queuety.Config, c wpconfig.Constant) error {
		entries := c.Array
		if c.Kind == wpconfig.ConstString { // from the environment
			var err error
			if entries, err = parseBudgetText(c.Text); err != nil {
				return err
			}
		}
		m := map[string]int64{}
		for _, e := range entries {
			name := strings.TrimSpace(e.Key)
			n, ok := e.Value.Int()
			if name == "" || !ok || n < 1 {
				continue
			}
			m[name] = n
		}
		if len(m) == 0 {
			m = nil
		}
		*dst(cfg) = m
		return nil
	}
}

// budgetFlagText writes an array define as the budget flags' name=units
// list (entries the plugin drops are dropped here too).
func budgetFlagText(c wpconfig.Constant) (string, error) {
	if c.Kind != wpconfig.ConstArray {
		return "", fmt.Errorf("want an array of name => cost units")
	}
	var parts []string
	for _, e := range c.Array {
		name := strings.TrimSpace(e.Key)
		if n, ok := e.Value.Int(); name != "" && ok && n >= 1 {
			parts = append(parts, fmt.Sprintf("%s=%d", name, n))
		}
	}
	return strings.Join(parts, ","), nil
}

func parseBudgetText(s string) ([]wpconfig.ArrayEntry, error) {
	s = strings.TrimSpace(s)
	var out []wpconfig.ArrayEntry
	if strings.HasPrefix(s, "{") {
		var m map[string]json.Number
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, fmt.Errorf("want a JSON object of limits or name=limit pairs: %w", err)
		}
		for k, v := range m {
			out = append(out, wpconfig.ArrayEntry{Key: k, Value: wpconfig.Constant{Kind: wpconfig.ConstString, Text: v.String()}})
		}
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=limit", pair)
		}
		out = append(out, wpconfig.ArrayEntry{Key: k, Value: wpconfig.Constant{Kind: wpconfig.ConstString, Text: strings.TrimSpace(v)}})
	}
	return out, nil
}

// debugFlag is QUEUETY_DEBUG as a flag (work).
func debugFlag() cli.Flag {
	return &cli.BoolFlag{Name: "debug", EnvVars: []string{"QUEUETY_DEBUG"}, Usage: "write the plugin's debug log rows, as QUEUETY_DEBUG does"}
}

func boolField(dst func(*queuety.Config) *bool, invert bool) func(*queuety.Config, wpconfig.Constant) error {
	return func(cfg *queuety.Config, c wpconfig.Constant) error {
		*dst(cfg) = c.Bool() != invert
		return nil
	}
}

// siteSettings lists every constant src/Config.php reads, but the table
// names (baseConfig reads those).
var siteSettings = []siteSetting{
	{define: "QUEUETY_STALE_TIMEOUT", flag: "stale-timeout", toFlag: seconds,
		toConfig: func(cfg *queuety.Config, c wpconfig.Constant) error {
			n, ok := c.Int()
			if !ok {
				return fmt.Errorf("want a number of seconds, not an array")
			}
			cfg.StaleTimeout = time.Duration(n) * time.Second
			return nil
		}},
	// 0 is pcntl_alarm(0) in the plugin: no time limit. A year stands in.
	{define: "QUEUETY_MAX_EXECUTION_TIME", flag: "job-timeout", toFlag: func(c wpconfig.Constant) (string, error) {
		if n, ok := c.Int(); ok && n <= 0 {
			return "8760h", nil
		}
		return seconds(c)
	}},
	{define: "QUEUETY_RETRY_BACKOFF", flag: "backoff", toFlag: backoffName,
		toConfig: func(cfg *queuety.Config, c wpconfig.Constant) error {
			name, _ := backoffName(c)
			b, err := queuety.ParseBackoff(name)
			cfg.Backoff = b
			return err
		}},
	// The plugin never purges on its own: these are only the defaults of
	// `purge` and `log purge` (purgeDays), never a sweep inside `work`.
	{define: "QUEUETY_RETENTION_DAYS", none: "only the default of `queuety purge`, as of `wp queuety purge`; work deletes nothing unless --retention-days turns its sweep on"},
	{define: "QUEUETY_LOG_RETENTION_DAYS", none: "only the default of `queuety log purge`; work deletes nothing unless --log-retention-days turns its sweep on"},
	// The plugin's worker sleeps this long when idle; ours polls.
	{define: "QUEUETY_WORKER_SLEEP", flag: "poll-interval", toFlag: seconds},
	// The plugin's worker exits after this many jobs or this much memory so
	// a fresh PHP process takes over; the daemon recycles its PHP processes.
	{define: "QUEUETY_WORKER_MAX_JOBS", flag: "php-max-jobs", toFlag: integer},
	{define: "QUEUETY_WORKER_MAX_MEMORY", flag: "php-max-memory", toFlag: integer},
	// Config::cache_ttl: how long the plugin caches a queue's paused flag.
	{define: "QUEUETY_CACHE_TTL", toConfig: durField(func(c *queuety.Config) *time.Duration { return &c.PauseCacheTTL }, time.Second, 0)},
	{define: "QUEUETY_DEBUG", flag: "debug", toFlag: boolText,
		toConfig: boolField(func(c *queuety.Config) *bool { return &c.Debug }, false)},
	{define: "QUEUETY_RESOURCE_ADMISSION", toConfig: boolField(func(c *queuety.Config) *bool { return &c.ResourceAdmissionOff }, true)},
	{define: "QUEUETY_RESOURCE_PROFILE_WINDOW_MINUTES", toConfig: durField(func(c *queuety.Config) *time.Duration { return &c.ResourceProfileWindow }, time.Minute, 1)},
	{define: "QUEUETY_RESOURCE_PROFILE_TTL", toConfig: durField(func(c *queuety.Config) *time.Duration { return &c.ResourceProfileTTL }, time.Second, 1)},
	{define: "QUEUETY_RESOURCE_MEMORY_HEADROOM_MB", toConfig: headroomField(func(c *queuety.Config) *int { return &c.ResourceMemoryHeadroomMB })},
	{define: "QUEUETY_RESOURCE_SYSTEM_MEMORY_AWARENESS", toConfig: boolField(func(c *queuety.Config) *bool { return &c.SystemMemoryAwarenessOff }, true)},
	{define: "QUEUETY_RESOURCE_SYSTEM_MEMORY_HEADROOM_MB", toConfig: headroomField(func(c *queuety.Config) *int { return &c.SystemMemoryHeadroomMB })},
	// work has flags for these (--queue-cost-budgets); other commands take
	// the define or the environment straight into the Config.
	{define: "QUEUETY_RESOURCE_QUEUE_COST_BUDGETS", flag: "queue-cost-budgets", toFlag: budgetFlagText,
		toConfig: budgets(func(c *queuety.Config) *map[string]int64 { return &c.QueueCostBudgets })},
	{define: "QUEUETY_RESOURCE_GROUP_COST_BUDGETS", flag: "group-cost-budgets", toFlag: budgetFlagText,
		toConfig: budgets(func(c *queuety.Config) *map[string]int64 { return &c.GroupCostBudgets })},
	{define: "QUEUETY_RESOURCE_TIME_HEADROOM_MS", toConfig: durField(func(c *queuety.Config) *time.Duration { return &c.ResourceTimeHeadroom }, time.Millisecond, 0)},
	{define: "QUEUETY_WORKER_POOL_SCALE_INTERVAL", none: "the daemon scales goroutines, not PHP worker processes (--concurrency)"},
	{define: "QUEUETY_WORKER_POOL_IDLE_GRACE", none: "the daemon scales goroutines, not PHP worker processes (--concurrency)"},
}

// settingSource is where one setting of this run came from.
type settingSource struct {
	Name  string // the flag, or the define for settings without one
	Value string
	From  string // "flag", "env QUEUETY_X", "wp-config QUEUETY_X (line N)"
}

// siteConfig is what applySiteSettings found: the sources to log, the
// settings to apply to the Config once the flags are read, and the flags
// a wp-config define set (for error messages).
type siteConfig struct {
	sources  []settingSource
	pending  []func(*queuety.Config) error
	fromSite map[string]string // flag -> "wp-config's QUEUETY_X (line N)"
	unused   []string          // defines the daemon has no use for, with why
}

// siteDefines gives the wp-config's constants when --wp-config is set
// (with or without --dsn); nil otherwise.
func siteDefines(c *cli.Context) (map[string]wpconfig.Constant, string, error) {
	s, err := readWPConfig(c)
	if err != nil || s == nil {
		return nil, "", err
	}
	return s.Constants, c.String("wp-config"), nil
}

// applySiteSettings feeds the wp-config defines into the command's flags
// that neither the command line nor the environment set (so the flag
// checks validate them), and queues the settings without a flag. Call it
// before reading the flags; then apply() the result to the Config.
func applySiteSettings(c *cli.Context) (*siteConfig, error) {
	defines, _, err := siteDefines(c)
	if err != nil {
		return nil, err
	}
	sc := &siteConfig{fromSite: map[string]string{}}
	for _, s := range siteSettings {
		def, defined := defines[s.define]
		where := "wp-config " + defineRef(s.define, def)
		switch {
		case s.none != "":
			if defined {
				sc.unused = append(sc.unused, s.define+": "+s.none)
			}
		case s.flag != "" && hasFlag(c, s.flag):
			if c.IsSet(s.flag) || !defined {
				continue // flag or environment: the general report names it
			}
			text, err := s.toFlag(def)
			if err == nil {
				err = c.Set(s.flag, text)
			}
			if err != nil {
				return nil, usagef("wp-config's %s: %v", defineRef(s.define, def), err)
			}
			sc.fromSite[s.flag] = "wp-config's " + defineRef(s.define, def)
			sc.sources = append(sc.sources, settingSource{Name: "--" + s.flag, Value: text, From: where})
		case s.toConfig != nil:
			val, from := def, where
			if env, ok := os.LookupEnv(s.define); ok {
				val, from = wpconfig.Constant{Kind: wpconfig.ConstString, Text: env}, "env "+s.define
			} else if !defined {
				continue
			}
			apply := s.toConfig
			define := s.define
			sc.pending = append(sc.pending, func(cfg *queuety.Config) error {
				if err := apply(cfg, val); err != nil {
					return usagef("%s (%s): %v", define, from, err)
				}
				return nil
			})
			sc.sources = append(sc.sources, settingSource{Name: s.define, Value: constantText(val), From: from})
		}
	}
	return sc, nil
}

// defineRef names a define for messages, with its line in wp-config.php
// when it is there (Bedrock's are in config/application.php; the official
// image's come from the environment).
func defineRef(name string, c wpconfig.Constant) string {
	if c.Line == 0 {
		return name
	}
	return fmt.Sprintf("%s (line %d)", name, c.Line)
}

// apply sets the settings without a flag on cfg.
func (sc *siteConfig) apply(cfg *queuety.Config) error {
	for _, fn := range sc.pending {
		if err := fn(cfg); err != nil {
			return err
		}
	}
	return nil
}

// explain adds where a refused flag value came from when a wp-config
// define set it: "--stale-timeout 0s: must be at least 1s" names a flag
// the user never typed.
func (sc *siteConfig) explain(err error) error {
	if err == nil || sc == nil {
		return err
	}
	for flag, where := range sc.fromSite {
		if strings.HasPrefix(err.Error(), "--"+flag+" ") || strings.HasPrefix(err.Error(), "--"+flag+":") {
			return usagef("%v (set by %s)", err, where)
		}
	}
	return err
}

func constantText(c wpconfig.Constant) string {
	if c.Kind != wpconfig.ConstArray {
		return c.Text
	}
	parts := make([]string, len(c.Array))
	for i, e := range c.Array {
		parts[i] = e.Key + "=" + e.Value.Text
	}
	return strings.Join(parts, ",")
}

func hasFlag(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// secretFlag: flags whose values are never logged.
func secretFlag(name string) bool {
	return name == "dsn" || strings.Contains(name, "token") || strings.Contains(name, "password")
}

// flagSources lists the command's and the global flags the command line
// or the environment set, with their values (secrets hidden).
func flagSources(c *cli.Context) []settingSource {
	typed := typedFlags(c)
	var out []settingSource
	seen := map[string]bool{}
	var visit func([]cli.Flag)
	visit = func(flags []cli.Flag) {
		for _, f := range flags {
			name := f.Names()[0]
			if seen[name] || !c.IsSet(name) {
				continue
			}
			seen[name] = true
			from := "flag"
			if !slices.ContainsFunc(f.Names(), func(n string) bool { return typed[n] }) {
				if env := setEnv(f); env != "" {
					from = "env " + env
				}
			}
			value := fmt.Sprint(c.Value(name))
			if secretFlag(name) {
				value = "(hidden)"
			}
			out = append(out, settingSource{Name: "--" + name, Value: value, From: from})
		}
	}
	visit(c.Command.Flags)
	visit(c.App.Flags)
	return out
}

// setEnv names the environment variable that set f, if one did.
func setEnv(f cli.Flag) string {
	ev, ok := f.(interface{ GetEnvVars() []string })
	if !ok {
		return ""
	}
	for _, e := range ev.GetEnvVars() {
		if _, ok := os.LookupEnv(e); ok {
			return e
		}
	}
	return ""
}

// typedFlags are the flag names on the command line Main ran (a flag and
// its environment variable both set: the flag wins, and says so).
func typedFlags(c *cli.Context) map[string]bool {
	out := map[string]bool{}
	args, _ := c.App.Metadata[argsKey].([]string)
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			out[name] = true
		}
	}
	return out
}

const argsKey = "queuety.args"

// logSettings says at start where each setting that is not its default
// came from, and which of the site's defines the daemon has no use for.
func logSettings(log *slog.Logger, c *cli.Context, sc *siteConfig) {
	fromSite := map[string]bool{}
	for _, s := range sc.sources {
		fromSite[s.Name] = true
	}
	all := sc.sources
	for _, s := range flagSources(c) {
		if !fromSite[s.Name] {
			all = append(all, s)
		}
	}
	for _, s := range all {
		log.Info("setting", "name", s.Name, "value", s.Value, "from", s.From)
	}
	if s, ok := c.App.Metadata[wpConfigKey].(*wpconfig.Settings); ok {
		log.Info("wp-config read", "path", c.String("wp-config"), "reader", string(s.Reader))
	}
	for _, u := range sc.unused {
		log.Info("wp-config setting not used", "why", u)
	}
}
