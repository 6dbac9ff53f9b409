package cli

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/wpconfig"
	"github.com/queuety-go/queuety/queuety"
)

// With --sites every single site brings its own QUEUETY_* settings: the
// defines of its wp-config.php, and QUEUETY_X=value words on its line of
// a sites file. They apply to that site alone, with the precedence of one
// site (site_settings.go): the command's flag or environment variable
// (which speak for every site), then the site's own (a line's word before
// its wp-config's define), then the default. They are read again with the
// sites, so a site whose settings changed is restarted with them
// (queuety.Sites).

// notPerSite are the settings with a flag that stay the command's with
// many sites, and why.
var notPerSite = map[string]string{
	"QUEUETY_WORKER_SLEEP":      "with many sites --poll-interval paces one look at every site of a database server, not a site's own poll",
	"QUEUETY_WORKER_MAX_JOBS":   "with many sites the PHP pools take --php-max-jobs",
	"QUEUETY_WORKER_MAX_MEMORY": "with many sites the PHP pools take --php-max-memory",
}

// perSiteFlagSettings apply the settings whose single-site path goes
// through a flag and that have no toConfig of their own (other commands
// read them differently).
var perSiteFlagSettings = map[string]func(*queuety.Config, wpconfig.Constant) error{
	// 0 is pcntl_alarm(0) in the plugin: no time limit; a year stands in,
	// as on the single-site path.
	"QUEUETY_MAX_EXECUTION_TIME": func(cfg *queuety.Config, c wpconfig.Constant) error {
		n, ok := c.Int()
		if !ok {
			return fmt.Errorf("want a number of seconds, not an array")
		}
		if n <= 0 {
			cfg.JobTimeout = 8760 * time.Hour
			return nil
		}
		cfg.JobTimeout = time.Duration(n) * time.Second
		return nil
	},
}

// siteSettingsReader applies each site's settings over the command's. It
// is built once at start, so discovery (on Sites' goroutine) reads no
// flags.
type siteSettingsReader struct {
	// command: the defines whose setting the command itself gives (its
	// flag, or for settings without one the QUEUETY_X variable).
	command map[string]string // define -> "--stale-timeout" or "env QUEUETY_CACHE_TTL"
	// jobTimeoutBudget: --once without --max-time, whose time budget is
	// the job timeout (readRunLimits), so each site's own.
	jobTimeoutBudget bool
	log              *slog.Logger

	mu     sync.Mutex
	logged map[string]string // site -> its settings as last logged
}

func newSiteSettingsReader(c *cli.Context, log *slog.Logger) *siteSettingsReader {
	r := &siteSettingsReader{command: map[string]string{}, log: log, logged: map[string]string{},
		jobTimeoutBudget: c.Bool("once") && c.Duration("max-time") <= 0}
	for _, s := range siteSettings {
		switch {
		case s.flag != "" && hasFlag(c, s.flag) && c.IsSet(s.flag):
			r.command[s.define] = "--" + s.flag
		case s.flag == "":
			if _, ok := os.LookupEnv(s.define); ok {
				r.command[s.define] = "env " + s.define
			}
		}
	}
	return r
}

// siteWord is a QUEUETY_X=value word of a sites-file line.
var siteWord = regexp.MustCompile(`^QUEUETY_[A-Z0-9_]+=`)

// splitSiteWords parts a sites-file line into its site (a wp-config.php
// path, or a DSN and a prefix) and its QUEUETY_X=value words.
func splitSiteWords(fields []string) (site []string, words map[string]wpconfig.Constant, err error) {
	site = fields
	for i, f := range fields {
		if i > 0 && siteWord.MatchString(f) {
			site = fields[:i]
			break
		}
	}
	for _, f := range fields[len(site):] {
		name, val, _ := strings.Cut(f, "=")
		if !siteWord.MatchString(f) {
			return site, nil, fmt.Errorf("%q: after the first QUEUETY_X=value word, every word is one", f)
		}
		if !slices.ContainsFunc(siteSettings, func(s siteSetting) bool { return s.define == name }) {
			return site, nil, fmt.Errorf("%s: not a setting the plugin reads (the QUEUETY_* settings of src/Config.php but the table names)", name)
		}
		if words == nil {
			words = map[string]wpconfig.Constant{}
		}
		words[name] = wordConstant(val)
	}
	return site, words, nil
}

// wordConstant reads a word's value as the define() it stands for: an
// integer, true or false, else a string (a budget list, "linear").
func wordConstant(v string) wpconfig.Constant {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return wpconfig.Constant{Kind: wpconfig.ConstInt, Text: v}
	}
	switch strings.ToLower(v) {
	case "true":
		return wpconfig.Constant{Kind: wpconfig.ConstBool, Text: "1"}
	case "false":
		return wpconfig.Constant{Kind: wpconfig.ConstBool, Text: ""}
	}
	return wpconfig.Constant{Kind: wpconfig.ConstString, Text: v}
}

// ownSettings applies a listed site's own settings; refused ones are the
// site's Err (reported, not served). Without own (status) the site keeps
// the command's.
func ownSettings(site queuety.Site, own *siteSettingsReader, defines, words map[string]wpconfig.Constant, wordsErr error) queuety.Site {
	switch {
	case wordsErr != nil:
		site.Err = fmt.Errorf("sites line: %w", wordsErr)
	case own != nil:
		site.Err = own.apply(site.Name, &site.Config, defines, words)
	}
	return site
}

// apply sets site's own settings on cfg (a copy of the command's): its
// line's words, else its wp-config's defines, where the command gives
// none. An error names the constant, where it came from and why; the
// site is then not served (queuety.Site.Err).
func (r *siteSettingsReader) apply(site string, cfg *queuety.Config, defines, words map[string]wpconfig.Constant) error {
	var applied, ignored []string
	for _, s := range siteSettings {
		val, where := words[s.define], "sites line"
		if _, ok := words[s.define]; !ok {
			var defined bool
			if val, defined = defines[s.define]; !defined {
				continue
			}
			where = "wp-config"
			if val.Line > 0 {
				where = fmt.Sprintf("wp-config line %d", val.Line)
			}
		}
		ref := fmt.Sprintf("%s (%s)", s.define, where)
		set := s.toConfig
		if set == nil {
			set = perSiteFlagSettings[s.define]
		}
		switch {
		case s.none != "":
			ignored = append(ignored, ref+": "+s.none)
		case notPerSite[s.define] != "":
			ignored = append(ignored, ref+": "+notPerSite[s.define])
		case r.command[s.define] != "":
			ignored = append(ignored, ref+": the command's "+r.command[s.define]+" wins")
		case set == nil:
			ignored = append(ignored, ref+": not read with many sites")
		default:
			if err := set(cfg, val); err != nil {
				return fmt.Errorf("%s: %v", ref, err)
			}
			if err := checkSiteSetting(s.define, cfg); err != nil {
				return fmt.Errorf("%s %s: %v", ref, constantText(val), err)
			}
			applied = append(applied, s.define+"="+constantText(val)+" ("+where+")")
		}
	}
	if r.jobTimeoutBudget {
		cfg.TimeBudget = cfg.JobTimeout
	}
	// What the worker would refuse at start (the site's stale timeout
	// against the command's --heartbeat-interval, …), said now with the
	// site's name instead of retried every few seconds.
	check := *cfg
	if err := check.Validate(); err != nil {
		return fmt.Errorf("settings: %v", err)
	}
	r.logSite(site, applied, ignored)
	return nil
}

// checkSiteSetting refuses what the single-site path's flag checks refuse
// (flagcheck.go), in the constant's terms.
func checkSiteSetting(define string, cfg *queuety.Config) error {
	switch define {
	case "QUEUETY_STALE_TIMEOUT":
		if cfg.StaleTimeout < time.Second {
			return fmt.Errorf("must be at least 1 second (reserved_at has one-second resolution)")
		}
	}
	return nil
}

// logSite says which of a site's settings apply and which do not, when
// that is new: discovery runs every --sites-reread, and a host of
// hundreds of sites must not log them all each time.
func (r *siteSettingsReader) logSite(site string, applied, ignored []string) {
	text := strings.Join(applied, ", ") + "\x00" + strings.Join(ignored, "; ")
	r.mu.Lock()
	seen, ok := r.logged[site]
	r.logged[site] = text
	r.mu.Unlock()
	if (ok && seen == text) || (!ok && len(applied)+len(ignored) == 0) {
		return
	}
	attrs := []any{"site", site}
	if len(applied) > 0 {
		attrs = append(attrs, "applied", strings.Join(applied, ", "))
	}
	if len(ignored) > 0 {
		attrs = append(attrs, "not_applied", strings.Join(ignored, "; "))
	}
	r.log.Info("site settings", attrs...)
}
