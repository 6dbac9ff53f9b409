package queuety

import "reflect"

// A site's settings come with its listing (Site.Config, Site.Err) and are
// read again at every discovery: a site whose settings changed is stopped
// as on SIGTERM (its running jobs finish within its grace) and started
// again with the new ones; the others are left alone. A served site whose
// new settings are refused keeps running on those it has, as a daemon
// keeps its configuration when a reload finds a bad one: stopping it
// would leave its queue unserved over a typo.

// keep reports whether r goes on as it is for the listing next; false:
// restart it with next. Called with s.mu held.
func (s *Sites) keep(r *siteRun, next Site) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if next.Err != nil && r.worker != nil {
		if r.refused == nil || r.refused.Error() != next.Err.Error() {
			s.log.Warn("sites: the site's new settings are refused; it runs on those it has", "site", next.Name, "err", next.Err)
		}
		r.refused = next.Err
		return true
	}
	if !sameSite(r.site, next) {
		return false
	}
	if r.refused != nil {
		s.log.Info("sites: the site's settings are those it runs on again", "site", next.Name)
		r.refused = nil
	}
	return true
}

// refuse reports a new site whose settings are refused; it is not started
// (nor retried) until a discovery lists it without the error.
func (s *Sites) refuse(r *siteRun) {
	s.log.Warn("sites: site not served: its settings are refused", "site", r.site.Name, "err", r.site.Err)
	r.set(SiteFailed, r.site.Err)
}

// sameSite reports whether two listings of a site would be served alike.
// The logger, clock and observer are what serves a site, not its
// settings: a Discover may build them anew each time. Its Weight is a
// setting: its share of the slots is fixed when its worker starts.
func sameSite(a, b Site) bool {
	if a.URL != b.URL || a.Dir != b.Dir || a.Weight != b.Weight || errText(a.Err) != errText(b.Err) {
		return false
	}
	ac, bc := a.Config, b.Config
	ac.Logger, bc.Logger = nil, nil
	ac.Clock, bc.Clock = nil, nil
	ac.Observer, bc.Observer = nil, nil
	return reflect.DeepEqual(ac, bc)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
