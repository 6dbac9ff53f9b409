package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/wpconfig"
	"github.com/queuety-go/queuety/queuety"
)

// sitesFlags are work's flags for serving many sites (docs/sites.md).
func sitesFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "network", EnvVars: []string{"QUEUETY_NETWORK"}, Usage: "serve every subsite of the multisite network of this `wp-config.php` (subsites read from wp_blogs; blog N's tables on <prefix>N_)"},
		&cli.StringFlag{Name: "sites", EnvVars: []string{"QUEUETY_SITES"}, Usage: "serve many single sites: a glob of wp-config.php files (quote it: '/var/www/*/wp-config.php'), or a `file` listing one wp-config.php path, or a DSN and a table prefix, a line"},
		&cli.DurationFlag{Name: "sites-reread", Value: queuety.DefaultSitesReread, EnvVars: []string{"QUEUETY_SITES_REREAD"}, Usage: "with --network or --sites, read the sites again this often (and on SIGHUP)"},
		// Its old name, --conns-per-database, from when each database had
		// a pool of its own, is kept so a unit file written for it starts.
		&cli.IntFlag{Name: "conns-per-server", Aliases: []string{"conns-per-database"}, Value: queuety.DefaultConnsPerServer, EnvVars: []string{"QUEUETY_CONNS_PER_SERVER", "QUEUETY_CONNS_PER_DATABASE"}, Usage: "with --network or --sites, connections the sites of one database server share, whatever their database, for work at least 2 (--max-conns caps them over all servers, default 100; --conns-per-database is its deprecated old name, once a figure per database)"},
		metricsMaxSitesFlag(),
		&cli.IntFlag{Name: "max-slots", EnvVars: []string{"QUEUETY_MAX_SLOTS"}, Usage: "with --network or --sites, jobs running at once over every site (0: no cap but each site's --concurrency); while slots are short they go to the sites with work in turn, the site running the fewest first"},
		&cli.DurationFlag{Name: "idle-look-interval", Value: queuety.DefaultSitesIdleLook, EnvVars: []string{"QUEUETY_IDLE_LOOK_INTERVAL"}, Usage: "with --network or --sites, look at the sites of a database server at least this often; between, each --poll-interval reads the server's write counters and looks only when some client wrote. Jobs due by time alone (a delay, a retry's backoff) start within it. At least --poll-interval (equal: every poll looks)"},
	}, phpSitesFlags()...)
}

// sitesMode reports whether work serves many sites, checking the flags
// that cannot go with it. --network names the wp-config that the rest of
// the command reads as --wp-config.
func sitesMode(c *cli.Context) (bool, error) {
	network, sites := c.String("network"), c.String("sites")
	switch {
	case network == "" && sites == "":
		return false, nil
	case network != "" && sites != "":
		return false, usagef("--network and --sites: give one")
	}
	if err := refuseSitesFlags(c); err != nil {
		return false, err
	}
	if network != "" {
		if wc := c.String("wp-config"); wc != "" && wc != network {
			return false, usagef("--network %s and --wp-config %s: the network's wp-config.php is given once", network, wc)
		}
		if err := c.Set("wp-config", network); err != nil {
			return false, err
		}
	}
	return true, nil
}

// workSites runs one worker per site until SIGTERM or SIGINT; SIGHUP reads
// the sites again. base is the command's configuration: the network's (its
// wp-config's database, prefix and QUEUETY_* settings) or, for --sites,
// the flags every site shares.
func (a *app) workSites(c *cli.Context, base queuety.Config, limits runLimits) error {
	obs, err := newSitesObservability(c, base.Logger)
	if err != nil {
		return err
	}
	var own *siteSettingsReader
	if c.String("sites") != "" {
		own = newSiteSettingsReader(c, base.Logger)
	}
	// base as it is at each read: the settings set below apply to the
	// sites too.
	discover := obs.observed(func(ctx context.Context) ([]queuety.Site, error) { return sitesDiscovery(c, base, own)(ctx) })
	discover = limitMemoryBySites(discover, base.Logger)
	// The per-site loops' single-site defaults cost an idle network more
	// than the batched look; flags and variables set still win.
	if !c.IsSet("signal-poll-interval") {
		base.SignalPollInterval = queuety.DefaultSitesSignalPoll
	}
	if !c.IsSet("wait-sweep-interval") {
		base.WaitSweepInterval = queuety.DefaultSitesWaitSweep
	}
	if !c.IsSet("worker-stale-after") {
		base.RegistrationHeartbeat = queuety.DefaultSitesRegistration
	}
	look := base.PollInterval
	base.PollInterval = 0                                   // each site's own poll is the fallback of the batched look
	idleLook := max(c.Duration("idle-look-interval"), look) // a default shorter than a longer poll follows it
	if c.IsSet("idle-look-interval") && c.Duration("idle-look-interval") < look {
		return usagef("--idle-look-interval %s: at least --poll-interval %s (equal: every poll looks)", c.Duration("idle-look-interval"), look)
	}
	maxConns := 0
	if c.IsSet("max-conns") {
		maxConns = c.Int("max-conns")
	}
	pools, err := newSitePools(c, a.reg, base)
	if err != nil {
		return err
	}
	if err := pools.start(c.Context); err != nil {
		return err
	}
	defer pools.stop(c.Context)
	served := newServedSites(pools) // the dashboard's view (--http)
	sitesCfg := queuety.SitesConfig{
		Discover:         discover,
		Registry:         served.registry,
		Started:          served.started,
		Stopped:          served.stopped,
		Reread:           c.Duration("sites-reread"),
		LookInterval:     look,
		IdleLookInterval: idleLook,
		ConnsPerServer:   c.Int("conns-per-server"),
		MaxConns:         maxConns,
		MaxSlots:         c.Int("max-slots"),
		Logger:           base.Logger,
	}
	limits.sites(c, &sitesCfg, &base)
	s, err := queuety.NewSites(sitesCfg)
	if err != nil {
		return usageError{err}
	}
	served.sites = s
	ctx, stop := notifyContext(c.Context)
	defer stop()
	ctx, stopTime := limits.timeLimit(ctx)
	defer stopTime()
	stopHTTP, err := served.listen(ctx, c, base.Logger)
	if err != nil {
		return err
	}
	defer stopHTTP()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				base.Logger.Info("SIGHUP: reading the sites again")
				s.Reread()
			case <-ctx.Done():
				return
			}
		}
	}()
	stopListener, err := obs.start(ctx, c.App.ErrWriter, s, pools)
	if err != nil {
		return err
	}
	defer stopListener()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Started():
	case err := <-done:
		return err
	}
	stopNotify := notifyReady(ctx, base.Logger, func() bool { return true })
	select {
	case <-ctx.Done():
		err = <-done
	case err = <-done: // a limit reached (--once, --max-jobs, flush)
	}
	stopNotify()
	if err != nil {
		return err
	}
	return limits.sitesSummary(ctx, c, s.Summary())
}

// sitesDiscovery finds the sites of --network or --sites (with own, each
// listed site's own QUEUETY_* settings).
func sitesDiscovery(c *cli.Context, base queuety.Config, own *siteSettingsReader) func(context.Context) ([]queuety.Site, error) {
	if list := c.String("sites"); list != "" {
		return func(ctx context.Context) ([]queuety.Site, error) { return listedSites(ctx, list, base, own) }
	}
	return queuety.NetworkSites(base)
}

// listedSites reads --sites: a glob of wp-config.php files, or a file
// whose lines are a wp-config.php path or "DSN PREFIX", either followed
// by QUEUETY_X=value words (blank lines and lines starting with #
// skipped). Every site takes base's worker settings with its own database
// and table names and, with own, its own QUEUETY_* settings
// (work_sites_settings.go).
func listedSites(ctx context.Context, list string, base queuety.Config, own *siteSettingsReader) ([]queuety.Site, error) {
	var lines []string
	if strings.ContainsAny(list, "*?[") || strings.HasSuffix(list, ".php") {
		paths, err := filepath.Glob(list)
		if err != nil {
			return nil, fmt.Errorf("--sites %s: %w", list, err)
		}
		lines = paths
	} else {
		f, err := os.Open(list)
		if err != nil {
			return nil, fmt.Errorf("--sites: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--sites %s: %w", list, err)
		}
	}
	var sites []queuety.Site
	for _, l := range lines {
		site, err := listedSite(ctx, l, base, own)
		if err != nil {
			// One broken wp-config must not stop the others: say so, skip it.
			base.Logger.Warn("--sites: site left out", "line", redactLine(l), "err", err)
			continue
		}
		sites = append(sites, site)
	}
	return sites, nil
}

func listedSite(ctx context.Context, line string, base queuety.Config, own *siteSettingsReader) (queuety.Site, error) {
	cfg := base
	fields, words, wordsErr := splitSiteWords(strings.Fields(line))
	// A wp-config.php path may hold spaces (a glob's match, a listed
	// path): a line that ends in .php is that path as a whole, with no
	// QUEUETY_X=value words after it.
	if strings.HasSuffix(line, ".php") {
		fields, words, wordsErr = []string{line}, nil, nil
	}
	if len(fields) == 2 { // DSN PREFIX
		cfg.DSN = fields[0]
		setTablePrefix(&cfg, fields[1])
		return ownSettings(queuety.Site{Name: redactLine(strings.Join(fields, " ")), Config: cfg}, own, nil, words, wordsErr), nil
	}
	if len(fields) != 1 {
		return queuety.Site{}, fmt.Errorf("want a wp-config.php path, or a DSN and a table prefix")
	}
	line = fields[0]
	s, err := wpconfig.Load(ctx, line, wpconfig.Options{})
	if err != nil {
		return queuety.Site{}, err
	}
	if cfg.DSN, err = s.DSN(""); err != nil {
		return queuety.Site{}, err
	}
	setTablePrefix(&cfg, s.TablePrefix)
	cfg.QueuetyTablePrefix = s.QueuetyTablePrefix
	cfg.TableOverrides = tableOverrides(s.Defines)
	return ownSettings(queuety.Site{Name: line, Dir: filepath.Dir(line), Config: cfg}, own, s.Constants, words, wordsErr), nil
}

// redactLine hides a DSN's password in a site's name and in logs.
func redactLine(line string) string {
	dsn, rest, _ := strings.Cut(line, " ")
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
			dsn = dsn[:colon] + ":***" + dsn[at:]
		}
	}
	if rest != "" {
		return dsn + " " + rest
	}
	return dsn
}

// siteCounts is one line of status --network/--sites.
type siteCounts struct {
	Site   string         `json:"site"`
	URL    string         `json:"url,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// orSitesStatus runs status for many sites when --network or --sites is
// given, else the one-site status (of the site --site names).
func orSitesStatus(one cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.IsSet("site") {
			return one(c)
		}
		many, err := sitesMode(c)
		if err != nil || !many {
			if err != nil {
				return err
			}
			return one(c)
		}
		base, err := baseConfig(c)
		if err != nil {
			return err
		}
		sites, err := sitesDiscovery(c, base, nil)(c.Context)
		if err != nil {
			return err
		}
		out := make([]siteCounts, 0, len(sites))
		var down []string
		for _, site := range sites {
			line := siteCounts{Site: site.Name, URL: site.URL}
			if line.Counts, err = siteTotals(c.Context, site.Config); err != nil {
				line.Error = err.Error()
				down = append(down, site.Name)
			}
			out = append(out, line)
		}
		if c.Bool("json") {
			if err := printJSON(c, out); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SITE\tURL\tPENDING\tPROCESSING\tCOMPLETED\tFAILED\tBURIED\t")
			for _, l := range out {
				if l.Error != "" {
					fmt.Fprintf(tw, "%s\t%s\tunreachable: %s\t\t\t\t\t\n", esc(l.Site), esc(l.URL), esc(l.Error))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", esc(l.Site), esc(l.URL), l.Counts["pending"], l.Counts["processing"],
					l.Counts["completed"], l.Counts["failed"], l.Counts["buried"])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(down) > 0 {
			return fmt.Errorf("%d of %d sites unreachable: %s", len(down), len(sites), strings.Join(down, ", "))
		}
		return nil
	}
}

// siteTotals is one site's job counts by status over its queues.
func siteTotals(ctx context.Context, cfg queuety.Config) (map[string]int, error) {
	cfg.MaxConns = 2
	client, err := queuety.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	stats, err := client.Stats(ctx)
	if err != nil {
		return nil, err
	}
	totals := map[string]int{}
	for _, q := range stats {
		for st, n := range q.Counts {
			totals[st] += n
		}
	}
	return totals, nil
}
