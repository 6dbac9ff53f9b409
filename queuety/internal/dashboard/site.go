package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// Site is what the dashboard reads and acts through for one site: Config's
// own fields for the one site of a single-site dashboard, SiteSource.Open's
// answer for each site of a dashboard of many.
type Site struct {
	// Client reads the site's tables and carries out every action.
	Client *queuety.Client
	// Registry holds the handlers workflow lifecycle actions may need
	// (a cancel handler, a resumed step); nil is an empty registry.
	Registry *queuety.Registry
	// PoolStats, when set, reports the site's PHP pool in this process.
	PoolStats func() phppool.Stats
	// WebhookDeliveries, when set, reports what this process's worker of
	// the site sent to each webhook (Worker.WebhookDeliveries); nil: this
	// process sends none for it.
	WebhookDeliveries func() []queuety.WebhookDelivery
}

// SiteInfo names one site of a dashboard of many.
type SiteInfo struct {
	// Name is the site's name (queuety.Site.Name: "blog 3", a wp-config.php
	// path); the dashboard shows it and derives the site's URL key from it.
	Name string
	// URL is the subsite's domain and path, shown beside the name.
	URL string
	// Dir is a single site's WordPress directory (queuety.Site.Dir): the
	// switcher takes it for the site, as --site does.
	Dir string
}

// SiteSource is the sites of a dashboard of many sites (Config.Sites).
type SiteSource interface {
	// List names the sites known now, in any order. It is called for
	// every page (the site switcher), so it must not touch a database.
	List() []SiteInfo
	// Open returns the named site's Site, or why it cannot be read now
	// (its database does not answer, its worker could not start). ctx
	// bounds the wait (Config.SiteTimeout).
	Open(ctx context.Context, name string) (Site, error)
}

// sitesPrefix is where a dashboard of many sites keeps each site's pages:
// sitesPrefix + key + "/".
const sitesPrefix = Prefix + "sites/"

// site is one site as a request sees it: its Site, its names, where its
// pages are, and the caches kept for it between requests.
type site struct {
	Site
	key, name, url string
	// base is where the site's pages are: Prefix for the one site of a
	// single-site dashboard, sitesPrefix + key + "/" for one of many.
	base string
	tp   *throughputCache
}

func (s *site) store() *store.Store { return clientstore.Of(s.Client) }

// siteHandler is a handler of one site's pages.
type siteHandler func(http.ResponseWriter, *http.Request, *site)

type siteCtxKey struct{}

// siteOf is the site a request's page belongs to (nil on the pages of
// every site: the all-sites overview, the login).
func siteOf(r *http.Request) *site {
	s, _ := r.Context().Value(siteCtxKey{}).(*site)
	return s
}

// onSite finds the site a request names (the one site, or the key in its
// path), then serves h for it: an unknown key is a 404, a site that cannot
// be read now a 503, each with the reason.
func (d *Dashboard) onSite(h siteHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := d.one
		if s == nil {
			var status int
			var msg string
			if s, status, msg = d.siteFor(r.Context(), r.PathValue("site")); s == nil {
				d.fail(w, r, status, msg)
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), siteCtxKey{}, s)), s)
	})
}

// siteFor opens the site whose key is key.
func (d *Dashboard) siteFor(ctx context.Context, key string) (*site, int, string) {
	info, ok := d.keyed().byKey[key]
	if !ok {
		return nil, http.StatusNotFound, fmt.Sprintf("No site %s here: it is not (or no longer) among the sites this dashboard shows; the overview at %s lists them.", store.QuotePrefix(key, 64), Prefix)
	}
	octx, cancel := context.WithTimeout(ctx, d.cfg.SiteTimeout)
	defer cancel()
	v, err := d.cfg.Sites.Open(octx, info.Name)
	if err != nil {
		d.log.Warn("dashboard: site cannot be read", "site", info.Name, "err", err)
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("Site %s cannot be read now: %s", info.Name, errorText(err, d.cfg.SiteTimeout))
	}
	return d.siteOfInfo(info, v), 0, ""
}

// siteOfInfo is the request's view of a site of many.
func (d *Dashboard) siteOfInfo(info keyedSite, v Site) *site {
	if v.Registry == nil {
		v.Registry = queuety.NewRegistry()
	}
	return &site{Site: v, key: info.Key, name: info.Name, url: info.URL, base: info.Base, tp: d.throughputOf(info.Name)}
}

// throughputOf is the throughput cache of the named site, made on first
// use; the caches of sites no longer listed are dropped now and then.
func (d *Dashboard) throughputOf(name string) *throughputCache {
	d.tpsMu.Lock()
	defer d.tpsMu.Unlock()
	if c, ok := d.tps[name]; ok {
		return c
	}
	if len(d.tps) >= 2*len(d.keyed().list)+16 {
		known := d.keyed().byName
		for n := range d.tps {
			if _, ok := known[n]; !ok {
				delete(d.tps, n)
			}
		}
	}
	c := &throughputCache{}
	d.tps[name] = c
	return c
}

// keyedSite is a SiteInfo with its URL key and where its pages are.
type keyedSite struct {
	SiteInfo
	Key  string
	Base string
}

// siteIndex is the sites of a dashboard of many, each with its key.
type siteIndex struct {
	list   []keyedSite // by name
	byKey  map[string]keyedSite
	byName map[string]keyedSite
}

// keyed lists the sites with their keys.
func (d *Dashboard) keyed() siteIndex {
	return indexSites(d.cfg.Sites.List())
}

func indexSites(infos []SiteInfo) siteIndex {
	infos = slices.Clone(infos)
	slices.SortFunc(infos, func(a, b SiteInfo) int { return strings.Compare(a.Name, b.Name) })
	infos = slices.CompactFunc(infos, func(a, b SiteInfo) bool { return a.Name == b.Name })
	keys := siteKeys(infos)
	idx := siteIndex{list: make([]keyedSite, len(infos)), byKey: make(map[string]keyedSite, len(infos)), byName: make(map[string]keyedSite, len(infos))}
	for i, info := range infos {
		k := keyedSite{SiteInfo: info, Key: keys[i], Base: sitesPrefix + keys[i] + "/"}
		idx.list[i] = k
		idx.byKey[k.Key] = k
		idx.byName[k.Name] = k
	}
	return idx
}

// siteKeys gives each site the key of its URLs (/ui/sites/<key>/). A
// name is data that cannot go in a path as it is: "blog 3" has a space, a
// wp-config.php path has slashes, and a name of ".." (or "%2e%2e", which
// browsers read alike) would be resolved by the browser into another
// page, as a queue name could (N1). So a key holds only lower-case
// letters, digits and dashes: the name's, or for a wp-config.php path
// its directory's ("/var/www/shop/wp-config.php" → "shop"). Names that
// give the same key, or none, have a hash of the name added, so every
// site keeps one key whatever order the sites are listed in.
func siteKeys(infos []SiteInfo) []string {
	keys := make([]string, len(infos))
	seen := map[string]int{}
	for i, info := range infos {
		keys[i] = slug(info.Name)
		seen[keys[i]]++
	}
	taken := map[string]bool{}
	for i, info := range infos {
		if keys[i] == "" || seen[keys[i]] > 1 {
			keys[i] = strings.TrimPrefix(keys[i]+"-", "-") + nameHash(info.Name, 8)
		}
		if taken[keys[i]] { // a slug that looks like another's hashed key
			keys[i] += "-" + nameHash(info.Name, 16)
		}
		taken[keys[i]] = true
	}
	return keys
}

// slugMax keeps a key short enough to read in a URL.
const slugMax = 48

// slug is a name's key before collisions are settled.
func slug(name string) string {
	if strings.HasSuffix(name, ".php") && strings.Contains(name, "/") {
		name = path.Base(path.Dir(name))
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= slugMax {
			break
		}
	}
	return b.String()
}

func nameHash(name string, n int) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:])[:n]
}

// tpCaches are the throughput caches of the sites of a dashboard of many.
type tpCaches struct {
	tpsMu sync.Mutex
	tps   map[string]*throughputCache
}
