package cli

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/queuety-go/queuety/queuety"
)

// siteMemoryLimit is what the daemon's soft memory limit grows by for each
// site of --network/--sites. An idle site keeps about 30 KiB live (bench
// sites: about 15 MiB at 500 sites), which daemonGOGC lets the heap grow to
// about 100 KiB; the rest is room for its running jobs. The single site's
// daemonMemoryLimit stays under it all, for one large step.
const siteMemoryLimit = 256 << 10

// sitesMemoryLimit is the soft memory limit of a daemon serving n sites.
func sitesMemoryLimit(n int) int64 { return daemonMemoryLimit + int64(n)*siteMemoryLimit }

// limitMemoryBySites has each discovery set the soft memory limit for the
// sites it listed (sitesMemoryLimit), unless GOMEMLIMIT chose one: a limit
// sized for one site would have a daemon for hundreds collect without
// pause, and none at all would let their heap triple (daemonGOGC).
// Discover is called from one goroutine (Sites.Run), so last needs no lock.
func limitMemoryBySites(discover func(context.Context) ([]queuety.Site, error), log *slog.Logger) func(context.Context) ([]queuety.Site, error) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return discover
	}
	last := -1
	return func(ctx context.Context) ([]queuety.Site, error) {
		sites, err := discover(ctx)
		if err == nil && len(sites) != last {
			last = len(sites)
			limit := sitesMemoryLimit(last)
			debug.SetMemoryLimit(limit)
			log.Info("soft memory limit set for the sites", "sites", last, "limit_mib", limit>>20)
		}
		return sites, err
	}
}
