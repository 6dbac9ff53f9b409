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

// matching counts and lists the rows a filter matches: count for every
// row, or byStatus when the action touches only some statuses (the
// confirmation then names them).
type matching struct {
	count    func(ctx context.Context, upTo int) (int, error)
	byStatus func(ctx context.Context, upTo int) ([]statusCount, error)
	ids      func(ctx context.Context, limit int) ([]int64, error)
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
		c := confirmData{Action: s.action, Kind: s.kind, Post: s.post, Back: s.back, Fields: s.fields, Limit: bulkLimit}
		var n int
		var err error
		if m.byStatus != nil {
			c.ByStatus, err = m.byStatus(r.Context(), countLimit+1)
			for _, sc := range c.ByStatus {
				if sc.Touched {
					n += sc.N
				}
			}
		} else {
			n, err = m.count(r.Context(), countLimit+1)
		}
		if err != nil {
			d.internalError(w, r, err)
			return nil, false
		}
		c.Count, c.More = min(n, countLimit), n > countLimit
		d.confirm(w, r, c)
		return nil, false
	}
	if ids, err = m.ids(r.Context(), bulkLimit); err != nil {
		d.internalError(w, r, err)
		return nil, false
	}
	return ids, true
}
