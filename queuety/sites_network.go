package queuety

import (
	"context"
	"fmt"
	"strconv"

	store "github.com/queuety-go/queuety/sql"
)

// NetworkSites discovers the subsites of the multisite network whose main
// site base configures (its DSN, and wp-config's $table_prefix as
// TablePrefix): every subsite of <prefix>blogs WordPress serves (not
// archived, deleted or spam) whose Queuety tables exist, the main site
// (blog 1) on the base prefix and blog N on <prefix>N_, as $wpdb->prefix
// names them. Each Site's Config is base with its prefix; its Name is
// "blog N" and its URL the subsite's domain and path (WP-CLI's --url).
// Use it as SitesConfig.Discover.
func NetworkSites(base Config) func(ctx context.Context) ([]Site, error) {
	return func(ctx context.Context) ([]Site, error) {
		if base.NoTablePrefix || base.TablePrefix == "" && base.DSN == "" {
			return nil, fmt.Errorf("a multisite network needs its table prefix and DSN")
		}
		prefix := base.TablePrefix
		if prefix == "" {
			prefix = "wp_"
		}
		db, err := store.Open(ctx, base.DSN, 1, base.Logger)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		blogs, err := store.NetworkBlogs(ctx, db, prefix)
		if err != nil {
			return nil, err
		}
		sites := make([]Site, 0, len(blogs))
		jobsTables := make([]string, 0, len(blogs))
		for _, b := range blogs {
			cfg := base
			cfg.TablePrefix = prefix
			if b.ID != 1 {
				cfg.TablePrefix = prefix + strconv.FormatInt(b.ID, 10) + "_"
			}
			tables, err := cfg.naming().Resolve()
			if err != nil {
				return nil, fmt.Errorf("blog %d: %w", b.ID, err)
			}
			jobsTables = append(jobsTables, tables["jobs"])
			sites = append(sites, Site{Name: "blog " + strconv.FormatInt(b.ID, 10), URL: b.Domain + b.Path, Config: cfg})
		}
		have, err := store.TablesPresent(ctx, db, jobsTables)
		if err != nil {
			return nil, err
		}
		served := sites[:0]
		for i, s := range sites {
			if have[jobsTables[i]] {
				served = append(served, s)
			} else if base.Logger != nil {
				base.Logger.Debug("sites: subsite without Queuety tables (plugin not active there, or not migrated) left out", "site", s.Name, "table", jobsTables[i])
			}
		}
		return served, nil
	}
}
