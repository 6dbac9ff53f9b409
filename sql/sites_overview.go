package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
)

// qSiteCounts is sites.sql's part of the dashboard's all-sites overview.
const qSiteCounts = "site-counts"

// SiteCountsCap is where SiteCountsAcross stops counting one status of one
// site: past it the overview says "more than", and a site with millions of
// pending rows costs no more to look at than one with a hundred thousand.
const SiteCountsCap = 100_000

// siteCountsPerStatement bounds one statement of SiteCountsAcross: each
// site adds six subqueries, and a few hundred sites' worth of text is
// parsed in well under a millisecond, but a statement of thousands would
// be a long one for the server to plan.
const siteCountsPerStatement = 100

// SiteCountsLook is one site's part of SiteCountsAcross: its tables, and
// the time before which a processing row's reservation is stale (its own
// stale timeout, at its own now).
type SiteCountsLook struct {
	SiteTables
	StaleBefore time.Time
}

// SiteCounts is one site's row of the all-sites overview. A count above
// SiteCountsCap reads SiteCountsCap+1.
type SiteCounts struct {
	Site       int   `db:"site"`
	Pending    int64 `db:"pending"`
	Processing int64 `db:"processing"`
	Failed     int64 `db:"failed"`
	Buried     int64 `db:"buried"`
	Stale      int64 `db:"stale"`
	// OldestPending is how long the oldest due pending job has waited, in
	// seconds (among the site's first 1,000 pending rows); not Valid when
	// none is due.
	OldestPending sql.NullInt64 `db:"oldest_pending"`
}

// SiteCountsAcross reads the overview's row of many sites whose tables one
// connection can name (one server; each table named with its Database when
// set), in one statement every 100 sites: counts[i] is looks[i]'s.
func SiteCountsAcross(ctx context.Context, db *sqlx.DB, looks []SiteCountsLook) ([]SiteCounts, error) {
	counts := make([]SiteCounts, len(looks))
	var b siteParts
	limit := SiteCountsCap + 1
	for i, l := range looks {
		if err := b.part(qSiteCounts, i, l.SiteTables, limit, limit, limit, limit, DateTime(l.StaleBefore), limit); err != nil {
			return nil, err
		}
	}
	rows, err := selectSites[SiteCounts](ctx, db, &b, siteCountsPerStatement, qSiteCounts)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Site >= 0 && r.Site < len(counts) {
			counts[r.Site] = r
		}
	}
	return counts, nil
}
