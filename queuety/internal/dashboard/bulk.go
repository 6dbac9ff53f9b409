package dashboard

import (
	"context"
	"net/http"
	"net/url"
)

// bulkSelection is what a bulk form of a list page acts on: the rows
// ticked, or (scope=all) every row its filter matches, up to bulkLimit,
// after a page that shows the count and asks (confirm=yes acts).
type bulkSelection struct {
	action, kind string // "retry", "jobs": the confirmation's words
	post         string // where the confirmation posts back
	back         string // the list page it came from
	fields       url.Values
	// match reads the filter; an unreadable one is the user's mistake.
	match func() (matching, error)
}

// matching counts and lists the rows a filter matches.
type matching struct {
	count func(ctx context.Context, upTo int) (int, error)
	ids   func(ctx context.Context, limit int) ([]int64, error)
}

// bulkIDs returns the ids a bulk post acts on. ok is false when it has
// answered the request itself: a bad filter or selection, an error, or the
// confirmation page.
func (d *Dashboard) bulkIDs(w http.ResponseWriter, r *http.Request, s bulkSelection) (ids []int64, ok bool) {
	if r.PostFormValue("scope") != "all" {
		ids, err := selectedIDs(r)
		if err != nil {
			d.fail(w, r, http.StatusBadRequest, err.Error())
			return nil, false
		}
		return ids, true
	}
	m, err := s.match()
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if r.PostFormValue("confirm") != "yes" {
		n, err := m.count(r.Context(), countLimit+1)
		if err != nil {
			d.internalError(w, r, err)
			return nil, false
		}
		d.confirm(w, r, confirmData{Action: s.action, Kind: s.kind, Count: min(n, countLimit), More: n > countLimit,
			Post: s.post, Back: s.back, Fields: s.fields, Limit: bulkLimit})
		return nil, false
	}
	if ids, err = m.ids(r.Context(), bulkLimit); err != nil {
		d.internalError(w, r, err)
		return nil, false
	}
	return ids, true
}
