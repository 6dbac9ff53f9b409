package queuety

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// SitesNamed is the sites of sites that want names: the one whose Name it
// is, else every site that answers to it by another name, as an operator
// calls a site (wp --url=… does): a subsite by its blog id ("3") or its
// URL, with or without its scheme and trailing slash; a single site by its
// directory. One site is a match; none or several are for the caller to
// tell (a usage error, a filtered list).
func SitesNamed(sites []Site, want string) []Site {
	for _, s := range sites {
		if s.Name == want {
			return []Site{s}
		}
	}
	var found []Site
	for _, s := range sites {
		if s.answersTo(want) {
			found = append(found, s)
		}
	}
	return found
}

// answersTo tells whether want names s by another name than its own: a
// subsite's blog id or URL, a single site's directory.
func (s Site) answersTo(want string) bool {
	if s.URL != "" {
		if id, err := strconv.ParseInt(want, 10, 64); err == nil && s.Name == "blog "+strconv.FormatInt(id, 10) {
			return true
		}
		return normalSiteURL(want) == normalSiteURL(s.URL)
	}
	return s.Dir != "" && filepath.Clean(want) == filepath.Clean(s.Dir)
}

// normalSiteURL is a site URL as wp_blogs keeps it (domain and path): no
// scheme, a lower-case host, a path ending in a slash.
func normalSiteURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		raw = u.Host + u.Path
	}
	host, path, _ := strings.Cut(raw, "/")
	if path = strings.Trim(path, "/"); path != "" {
		path += "/"
	}
	return strings.ToLower(host) + "/" + path
}
