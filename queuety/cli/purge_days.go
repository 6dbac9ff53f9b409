package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// purgeAge is where `purge` and `log purge` take their age from when
// --older-than is not given: the site's define, as `wp queuety purge`
// takes Config::retention_days() (QUEUETY_RETENTION_DAYS, 7 when unset).
// The plugin's `log purge` has no default (--older-than is required) and
// its QUEUETY_LOG_RETENTION_DAYS default, 0, means "keep": that define is
// taken only when it is above 0.
type purgeAge struct {
	define   string
	fallback int  // when nothing sets it; used only if hasFallback
	positive bool // only a value above 0 stands in for --older-than
	// hasFallback: purge falls back to the plugin's 7; log purge has none.
	hasFallback bool
}

var (
	purgeJobsAge = purgeAge{define: "QUEUETY_RETENTION_DAYS", fallback: 7, hasFallback: true}
	purgeLogsAge = purgeAge{define: "QUEUETY_LOG_RETENTION_DAYS", positive: true}
)

// days is the age in days and where it came from: --older-than, else the
// define's environment variable, else the define in --wp-config, else the
// plugin's default. An error says which source is wrong, or that none
// gives an age.
func (p purgeAge) days(c *cli.Context) (int, string, error) {
	if c.IsSet("older-than") {
		n := c.Int("older-than")
		if n < 0 {
			return 0, "", usagef("--older-than %d: must not be negative", n)
		}
		return n, "--older-than", nil
	}
	if env, ok := os.LookupEnv(p.define); ok && strings.TrimSpace(env) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(env))
		if err != nil || n < 0 {
			return 0, "", usagef("env %s=%q: want a number of days, 0 or more", p.define, env)
		}
		if !p.positive || n > 0 {
			return n, "env " + p.define, nil
		}
	}
	defines, _, err := siteDefines(c)
	if err != nil {
		return 0, "", err
	}
	if def, ok := defines[p.define]; ok {
		n, isInt := def.Int()
		if !isInt || n < 0 {
			return 0, "", usagef("wp-config's %s (line %d): want a number of days, 0 or more", p.define, def.Line)
		}
		if !p.positive || n > 0 {
			return int(n), fmt.Sprintf("wp-config %s (line %d)", p.define, def.Line), nil
		}
	}
	if p.hasFallback {
		return p.fallback, "the plugin's default", nil
	}
	return 0, "", usagef("--older-than <days> is required (or a %s above 0 in the environment or wp-config)", p.define)
}
