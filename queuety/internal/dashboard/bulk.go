package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
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
func (d *Dashboard) bulkIDs(w http.ResponseWriter, r *http.Request, sel bulkSelection) (ids []int64, ok bool) {
	if r.PostFormValue("scope") != "all" {
		ids, err := selectedIDs(r)
		if err != nil {
			d.fail(w, r, http.StatusBadRequest, err.Error())
			return nil, false
		}
		return ids, true
	}
	m, err := sel.match()
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if r.PostFormValue("confirm") != "yes" {
		c := confirmData{Action: sel.action, Kind: sel.kind, Post: sel.post, Back: sel.back, Fields: sel.fields, Limit: bulkLimit}
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

// statusMatching counts the rows of each of statuses (those with none are
// left out) and lists the ids of those in touches, oldest first.
func statusMatching(statuses, touches []string,
	count func(ctx context.Context, status string, upTo int) (int, error),
	ids func(ctx context.Context, status string, limit int) ([]int64, error),
) matching {
	return matching{
		byStatus: func(ctx context.Context, upTo int) ([]statusCount, error) {
			var out []statusCount
			for _, s := range statuses {
				n, err := count(ctx, s, upTo)
				if err != nil {
					return nil, err
				}
				if n > 0 {
					out = append(out, statusCount{Status: s, N: min(n, upTo), Touched: slices.Contains(touches, s)})
				}
			}
			return out, nil
		},
		ids: func(ctx context.Context, limit int) ([]int64, error) {
			var out []int64
			for _, s := range statuses {
				if !slices.Contains(touches, s) {
					continue
				}
				more, err := ids(ctx, s, limit)
				if err != nil {
					return nil, err
				}
				out = append(out, more...)
			}
			// The oldest limit across the statuses, as one query would give.
			slices.Sort(out)
			return out[:min(len(out), limit)], nil
		},
	}
}
