package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// The exits of a cron run (work_limits.go) over many sites, each as a user
// of one site's daemon would expect of it:
//   - --once: every site runs one job, as each site's own
//     `wp queuety work --once` would (none where nothing is due), then exit;
//   - --stop-when-empty and flush: every site until nothing it can claim is
//     due, then exit;
//   - --max-jobs N: N jobs in all over the sites (one budget the sites
//     take from as they find work), then stop every site;
//   - --max-time D: stop every site after D.
// Each stop is SIGTERM's: running jobs finish within --shutdown-grace. A
// site that could not be served (its database down at start, its
// settings refused) is not waited for; the run then exits 1 naming it.

// refuseSitesFlags refuses the flags that have no meaning with many sites
// (yet).
func refuseSitesFlags(c *cli.Context) error {
	set := func(f string) bool { return hasFlag(c, f) && c.IsSet(f) }
	switch {
	case set("worker-id"):
		// reserved_by and the worker registration name one worker; each
		// site has a worker of its own (host-pid-random), and one id for
		// all of them would read as one worker in every site's tables.
		return usagef("--worker-id is not available with --network or --sites: each site's worker has an id of its own")
	case c.String("sites") != "" && c.String("wp-config") != "":
		// Each site's wp-config.php is read for its database and its
		// settings; another one would say neither.
		return usagef("--sites reads each site's own wp-config.php; --wp-config (QUEUETY_WP_CONFIG) %s cannot go with it", c.String("wp-config"))
	}
	return nil
}

// sites sets the run's exits on the Sites and the sites' base Config: a
// --max-jobs budget shared by every site (--once keeps its one job a
// site, base.MaxJobs, as readRunLimits set it).
func (l runLimits) sites(c *cli.Context, cfg *queuety.SitesConfig, base *queuety.Config) {
	cfg.StopWhenEmpty = l.stopWhenEmpty
	if l.maxJobs > 0 && !c.Bool("once") {
		cfg.MaxJobs, base.MaxJobs = l.maxJobs, 0
	}
}

// timeLimit ends ctx after --max-time.
func (l runLimits) timeLimit(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.maxTime <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.maxTime)
}

// siteRunSummary is one site's line of a limited run's summary.
type siteRunSummary struct {
	Site      string `json:"site"`
	Processed int64  `json:"processed"`
	Completed int64  `json:"completed"`
	Retried   int64  `json:"retried"`
	Buried    int64  `json:"buried"`
	Error     string `json:"error,omitempty"`
}

// sitesRunSummary is what a limited run over many sites prints.
type sitesRunSummary struct {
	runSummary
	Sites []siteRunSummary `json:"sites"`
}

// sitesSummary prints what a limited run did (or, with --json, any run),
// and fails naming the sites that were not served.
func (l runLimits) sitesSummary(ctx context.Context, c *cli.Context, sum queuety.SitesSummary) error {
	if !l.any() && !c.Bool("json") {
		return nil
	}
	out := sitesRunSummary{Sites: make([]siteRunSummary, 0, len(sum.Sites))}
	out.Stopped = sum.Stopped
	switch {
	case out.Stopped != "":
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		out.Stopped = "max-time"
	default:
		out.Stopped = "signal"
	}
	for _, site := range sum.Sites {
		st := site.Stats
		line := siteRunSummary{Site: site.Name, Completed: st.Completed, Retried: st.Retried, Buried: st.Buried, Error: site.Error}
		line.Processed = line.Completed + line.Retried + line.Buried
		out.Sites = append(out.Sites, line)
		out.Processed += line.Processed
		out.Completed += line.Completed
		out.Retried += line.Retried
		out.Buried += line.Buried
	}
	if c.Bool("json") {
		if err := printJSON(c, out); err != nil {
			return err
		}
	} else {
		verb := "Workers stopped (" + out.Stopped + ")"
		if c.Command.Name == "flush" {
			verb = "Flushed"
		}
		fmt.Fprintf(c.App.Writer, "%s: %d jobs (%d completed, %d retried, %d buried) over %d sites.\n",
			verb, out.Processed, out.Completed, out.Retried, out.Buried, len(out.Sites))
	}
	down := sum.NotServed()
	if len(down) == 0 {
		return nil
	}
	var why []string
	for _, site := range out.Sites {
		if site.Error != "" {
			why = append(why, site.Site+": "+site.Error)
		}
	}
	return fmt.Errorf("%d of %d sites not served: %s", len(down), len(out.Sites), strings.Join(why, "; "))
}
