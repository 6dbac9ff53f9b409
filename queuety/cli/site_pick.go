package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// siteFlags point a read command (status, job list, log, workflow list,
// …) at the sites of --network or --sites, and --site at one of them.
// status, which lists every site without --site, reads --network and
// --sites from QUEUETY_NETWORK/QUEUETY_SITES too (fromEnv) as work does;
// the other commands need --site with them, so a unit's environment would
// make each a usage error.
func siteFlags(fromEnv bool) []cli.Flag {
	network := &cli.StringFlag{Name: "network", Usage: "the multisite network of this `wp-config.php` (status: a line a subsite; --site: that subsite)"}
	sites := &cli.StringFlag{Name: "sites", Usage: "the sites of this glob of wp-config.php files or `file`, as work --sites (status: a line a site; --site: that site)"}
	if fromEnv {
		network.EnvVars, sites.EnvVars = []string{"QUEUETY_NETWORK"}, []string{"QUEUETY_SITES"}
	}
	site := &cli.StringFlag{Name: "site", Usage: "with --network or --sites: read this site, by its `name` as status and /sites show it (a subsite also by blog id or URL, a single site also by its directory)"}
	return []cli.Flag{site, network, sites}
}

// commandConfig is the configuration a command connects with: the one
// site --site names among --network's or --sites', else baseConfig's.
func commandConfig(c *cli.Context) (queuety.Config, error) {
	if !hasFlag(c, "site") {
		return baseConfig(c)
	}
	many, err := sitesMode(c)
	if err != nil {
		return queuety.Config{}, err
	}
	switch {
	case !many && !c.IsSet("site"):
		return baseConfig(c)
	case !many:
		return queuety.Config{}, usagef("--site %q: give --network FILE or --sites GLOB|FILE to find it in", c.String("site"))
	case !c.IsSet("site"):
		return queuety.Config{}, usagef("--network/--sites: name the site to read with --site NAME (status --network/--sites lists them)")
	}
	base, err := baseConfig(c)
	if err != nil {
		return queuety.Config{}, err
	}
	sites, err := sitesDiscovery(c, base, nil)(c.Context)
	if err != nil {
		return queuety.Config{}, err
	}
	site, err := pickSite(sites, c.String("site"))
	if err != nil {
		return queuety.Config{}, err
	}
	return site.Config, nil
}

// pickSite finds want among sites (queuety.SitesNamed: by name, then a
// subsite by blog id or URL, a single site by its directory). An unknown
// name is a usage error listing a few known ones.
func pickSite(sites []queuety.Site, want string) (queuety.Site, error) {
	found := queuety.SitesNamed(sites, want)
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return queuety.Site{}, usagef("--site %q: %d sites answer to it (%s); give its name", want, len(found), siteNames(found, 5))
	case len(sites) == 0:
		return queuety.Site{}, usagef("--site %q: no sites found to choose from", want)
	}
	return queuety.Site{}, usagef("--site %q: no such site; known: %s", want, siteNames(sites, 5))
}

// siteNames lists up to n of sites' names, and how many more there are.
func siteNames(sites []queuety.Site, n int) string {
	var names []string
	for i, s := range sites {
		if i == n {
			names = append(names, fmt.Sprintf("and %d more", len(sites)-n))
			break
		}
		names = append(names, strconv.Quote(s.Name))
	}
	return strings.Join(names, ", ")
}
