package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/queuety/internal/poolset"
)

// defaultPHPIdle is --php-idle's default.
const defaultPHPIdle = 5 * time.Minute

// phpSitesFlags are work's flags for the PHP pools of many sites
// (docs/sites.md, "PHP per site").
func phpSitesFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "php-pools", Value: poolset.DefaultMax, EnvVars: []string{"QUEUETY_PHP_POOLS"}, Usage: "with --php and --network or --sites, PHP pools (--php-workers processes each, default 1 there) alive at once; past it a site's PHP jobs wait their turn"},
		&cli.DurationFlag{Name: "php-idle", Value: defaultPHPIdle, EnvVars: []string{"QUEUETY_PHP_IDLE"}, Usage: "with --php and --network or --sites, stop a site's PHP pool after this long without a PHP job (0: never); the next one starts it again"},
		&cli.BoolFlag{Name: "php-share", EnvVars: []string{"QUEUETY_PHP_SHARE"}, Usage: "with --php and --sites, single sites whose PHP command is the same (after --wp-load is added) share one pool"},
	}
}

// isPHPSitesFlag reports one of phpSitesFlags (serve, which runs no
// handler, takes none of them).
func isPHPSitesFlag(f cli.Flag) bool {
	return slices.ContainsFunc(phpSitesFlags(), func(p cli.Flag) bool { return p.Names()[0] == f.Names()[0] })
}

// sitePools gives each site a registry whose PHP handlers run in the pool
// loaded for it: the --php command with --url for a network's subsite
// (WordPress finds the subsite from the request, as with WP-CLI's --url)
// and --wp-load <dir>/wp-load.php for a single site when the command names
// none. The pools are a poolset: started by a site's first PHP job,
// stopped after --php-idle without one, at most --php-pools at once, and
// with --php-share one for the single sites whose command is the same.
// Without --php every site has the command's Go handlers only.
type sitePools struct {
	reg   *queuety.Registry
	cfg   phppool.Config
	share bool
	set   *poolset.Set // nil without --php
}

func newSitePools(c *cli.Context, reg *queuety.Registry, base queuety.Config) (*sitePools, error) {
	p := &sitePools{reg: reg}
	cfg, ok, err := phpPoolConfig(c)
	if err != nil || !ok {
		return p, err
	}
	if !c.IsSet("php-workers") {
		cfg.Workers = 1 // many sites: a process each unless told otherwise
	}
	maxPools := c.Int("php-pools")
	if maxPools < 1 {
		return nil, usagef("--php-pools %d: must be at least 1", maxPools)
	}
	idle := c.Duration("php-idle")
	if idle < 0 {
		return nil, usagef("--php-idle %v: must not be negative (0: never stop an idle pool)", idle)
	}
	if p.set, err = poolset.New(poolset.Config{Max: maxPools, Idle: idle, Clock: base.Clock, Logger: base.Logger}); err != nil {
		return nil, err
	}
	if p.share = c.Bool("php-share"); p.share && c.String("network") != "" {
		return nil, usagef("--php-share: only with --sites (a network's subsites are each loaded for their own --url)")
	}
	p.cfg = cfg
	return p, nil
}

// start starts the pools' reaper; no pool starts before a PHP job.
func (p *sitePools) start(ctx context.Context) error {
	if p.set == nil {
		return nil
	}
	return p.set.Start(ctx)
}

// stop stops every pool, once the sites' workers have stopped.
func (p *sitePools) stop(ctx context.Context) {
	if p.set != nil {
		p.set.Stop(ctx)
	}
}

// registry is the site's handlers (queuety.SitesConfig.Registry): the
// command's Go handlers, and with --php its pool as their fallback.
//
// A pool is shared only by single sites whose command is the same, with
// --php-share: their processes would be the same anyway (one command, one
// environment, one application loaded), so a job cannot tell one from the
// other, and the protocol need not say which site a job is of. What the
// sites give up is isolation: one site's PHP backlog or crashing handler
// delays or stops the others' PHP jobs, which is why it is asked for.
// A network's subsites never share: each is loaded for its own --url.
func (p *sitePools) registry(site queuety.Site) (*queuety.Registry, error) {
	if p.set == nil {
		return p.reg, nil
	}
	cfg := p.cfg
	cfg.Command = sitePHPCommand(cfg.Command, site)
	// The key names what the pool loads, so a site whose URL changed (a
	// subsite moved) gets a pool loaded for its new one.
	command := strings.Join(cfg.Command, "\x00")
	key := "site\x00" + site.Name + "\x00" + command
	if p.share && site.URL == "" {
		key = "shared\x00" + command
	}
	return p.reg.WithFallback(p.set.Attach(site.Name, key, cfg)), nil
}

// sitePHPCommand is the --php command loaded for site.
func sitePHPCommand(command []string, site queuety.Site) []string {
	command = slices.Clone(command)
	if site.URL != "" {
		return append(command, "--url", site.URL)
	}
	if site.Dir != "" && !slices.Contains(command, "--wp-load") {
		return append(command, "--wp-load", filepath.Join(site.Dir, "wp-load.php"))
	}
	return command
}

// stopped lets the site's pool go (queuety.SitesConfig.Stopped).
func (p *sitePools) stopped(site queuety.Site) {
	if p.set != nil {
		p.set.Detach(site.Name)
	}
}

// status is the named site's PHP pool on /sites, nil without --php.
func (p *sitePools) status(name string) *poolset.Status {
	if p == nil || p.set == nil {
		return nil
	}
	if st, ok := p.set.Status(name); ok {
		return &st
	}
	return nil
}

// poolOf is the named site's running PHP pool, for its counters on
// /metrics and the dashboard; nil without --php or while it has none
// (not started yet, or stopped when idle).
func (p *sitePools) poolOf(name string) *phppool.Pool {
	if p == nil || p.set == nil {
		return nil
	}
	return p.set.Pool(name)
}
