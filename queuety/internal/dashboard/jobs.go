package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// Bounds of the lists and bulk actions.
const (
	pageSize = 50
	// countLimit caps a "matching" count: past it the page says "more
	// than".
	countLimit = 100000
	// bulkLimit caps one bulk action (a click on "all N matching" acts on
	// the oldest bulkLimit; a second click takes the next ones).
	bulkLimit = 5000
	// maxPage is the last page a list shows: pages reach back over the
	// countLimit newest matching rows (filters narrow a longer list). A
	// page past it, or one that is not a whole number, is a 400 with the
	// reason; unchecked, a huge page overflowed the SQL OFFSET (N13).
	maxPage = countLimit / pageSize
)

// readPage reads the page parameter: absent is page 1.
func readPage(v url.Values) (int, error) {
	raw := v.Get("page")
	if raw == "" {
		return 1, nil
	}
	p, err := strconv.Atoi(raw)
	if err != nil || p < 1 || p > maxPage {
		return 0, fmt.Errorf("page %s: a page is a whole number from 1 to %d", store.QuotePrefix(raw, 24), maxPage)
	}
	return p, nil
}

// sinceChoices are the time filter's options.
var sinceChoices = []struct{ Value, Label string }{
	{"", "any time"}, {"15m", "last 15 minutes"}, {"1h", "last hour"}, {"24h", "last 24 hours"}, {"168h", "last 7 days"},
}

type jobFilter struct {
	Status, Queue, Handler, Since, Error string
	// Search: a job id ("42" or "#42"), or text found in the handler or
	// the payload.
	Search string
	Page   int
}

func readJobFilter(v url.Values) jobFilter {
	f := jobFilter{
		Status: v.Get("status"), Queue: strings.TrimSpace(v.Get("queue")), Handler: strings.TrimSpace(v.Get("handler")),
		Since: v.Get("since"), Error: strings.TrimSpace(v.Get("error")), Search: strings.TrimSpace(v.Get("q")),
	}
	f.Page, _ = strconv.Atoi(v.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

func (f jobFilter) query(now time.Time) (store.JobQuery, error) {
	q := store.JobQuery{Status: f.Status, Queue: f.Queue, Handler: f.Handler, ErrorText: f.Error, Text: f.Search}
	if id, err := strconv.ParseInt(strings.TrimPrefix(f.Search, "#"), 10, 64); err == nil && id > 0 {
		q.ID, q.Text = id, ""
	}
	if f.Status != "" && !validJobStatus(f.Status) {
		return q, fmt.Errorf("unknown job status %q", f.Status)
	}
	since, err := parseSince(f.Since, now)
	q.Since = since
	return q, err
}

func validJobStatus(s string) bool {
	for _, st := range store.Statuses {
		if st == s {
			return true
		}
	}
	return false
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("time filter %q: use a duration like 1h", s)
	}
	return now.Add(-d), nil
}

// values is the filter as query parameters (page apart).
func (f jobFilter) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"status": f.Status, "queue": f.Queue, "handler": f.Handler, "since": f.Since, "error": f.Error, "q": f.Search} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

type jobsData struct {
	Filter    jobFilter
	Statuses  []string
	Since     any
	Jobs      []store.JobRow
	Matching  int
	More      bool // more than countLimit match
	Query     string
	PrevPage  string
	NextPage  string
	BulkLimit int
	// DefaultAction is the bulk action selected first ("": none).
	DefaultAction string
	// Limits is each listed job's attempt limit (Client.MaxAttemptsOf).
	Limits map[int64]int
}

func (d *Dashboard) jobs(w http.ResponseWriter, r *http.Request, s *site) {
	f := readJobFilter(r.URL.Query())
	page, err := readPage(r.URL.Query())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Page = page
	st := s.store()
	q, err := f.query(st.Now())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	rows, err := st.QueryJobs(r.Context(), q, pageSize, (f.Page-1)*pageSize)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	n, err := st.CountJobs(r.Context(), q, countLimit+1)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	data := jobsData{Filter: f, Statuses: store.Statuses, Since: sinceChoices, Jobs: rows, Matching: min(n, countLimit), More: n > countLimit,
		Query: f.values().Encode(), BulkLimit: bulkLimit, DefaultAction: defaultJobAction(f.Status)}
	data.Limits = make(map[int64]int, len(rows))
	for i := range rows {
		j := rowview.Job(&rows[i])
		data.Limits[rows[i].ID] = s.Client.MaxAttemptsOf(s.Registry, &j)
	}
	data.PrevPage, data.NextPage = pages(f.values(), f.Page, len(rows) == pageSize)
	d.render(w, r, http.StatusOK, "jobs", view{Title: "Jobs", Nav: "jobs", Data: data})
}

// pages builds the previous and next page links ("" when none).
func pages(v url.Values, page int, full bool) (prev, next string) {
	if page > 1 {
		v.Set("page", strconv.Itoa(page-1))
		prev = "?" + v.Encode()
	}
	if full && page < maxPage {
		v.Set("page", strconv.Itoa(page+1))
		next = "?" + v.Encode()
	}
	return prev, next
}

type jobData struct {
	Job  *store.JobRow
	Logs []store.LogRow
	// MaxAttempts is the limit the worker applies (row, handler options,
	// the payload's __queuety_runtime), not the column alone.
	MaxAttempts int
	// The newest failure's class and stack trace, from the log rows (the
	// jobs table keeps the message only).
	ErrorClass, Trace string
	// Payload is the payload pretty-printed when it is JSON.
	Payload string
	Stuck   string
}

func (d *Dashboard) job(w http.ResponseWriter, r *http.Request, s *site) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "A job id is a number.")
		return
	}
	st := s.store()
	j, err := st.GetJob(r.Context(), id)
	if errors.Is(err, store.ErrJobNotFound) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("Job #%d does not exist.", id))
		return
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	logs, err := st.JobLogs(r.Context(), id)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	info := rowview.Job(j)
	data := jobData{Job: j, Logs: logs, MaxAttempts: s.Client.MaxAttemptsOf(s.Registry, &info), Payload: indentJSON(j.Payload)}
	for i := len(logs) - 1; i >= 0; i-- {
		if logs[i].ErrorTrace.Valid || logs[i].ErrorClass.Valid {
			data.ErrorClass, data.Trace = logs[i].ErrorClass.String, logs[i].ErrorTrace.String
			break
		}
	}
	d.render(w, r, http.StatusOK, "job", view{Title: fmt.Sprintf("Job #%d", id), Nav: "jobs", Data: data})
}

// indentJSON pretty-prints a JSON text, or returns it as it is.
func indentJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}

// jobActionStatuses are the statuses each bulk job action touches on
// "all matching": a retry re-runs only jobs that ended badly (never a
// completed one, nor one a worker holds), a bury takes only jobs not yet
// run or left failed, a delete takes any.
var jobActionStatuses = map[string][]string{
	"retry":  retryable,
	"bury":   {store.StatusPending, store.StatusFailed},
	"delete": store.Statuses,
}

// defaultJobAction is the bulk action a jobs page offers first, by the
// status it shows: retry for buried or failed jobs, none (the operator
// picks one) for any other status or for every status.
func defaultJobAction(status string) string {
	if slices.Contains(retryable, status) {
		return "retry"
	}
	return ""
}

// bulkJobs is POST /ui/jobs/bulk: action retry, bury or delete on the
// selected ids, or on every job the filter matches in the statuses the
// action touches (scope=all; the first post shows the count by status
// and asks, confirm=yes acts).
func (d *Dashboard) bulkJobs(w http.ResponseWriter, r *http.Request, s *site) {
	action := r.PostFormValue("action")
	if _, ok := jobActionStatuses[action]; !ok {
		msg := fmt.Sprintf("Unknown bulk action %q (retry, bury or delete).", action)
		if action == "" {
			msg = "Choose an action first: retry, bury or delete."
		}
		d.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	f := readJobFilter(r.PostForm)
	st := s.store()
	back := s.base + "jobs?" + f.values().Encode()
	ids, ok := d.bulkIDs(w, r, bulkSelection{
		action: action, kind: "jobs", post: s.base + "jobs/bulk", back: back, fields: f.values(),
		match: func() (matching, error) {
			q, err := f.query(st.Now())
			return jobMatching(st, q, action), err
		},
	})
	if !ok {
		return
	}
	if action == "retry" {
		res, err := s.retryJobs(r.Context(), ids)
		if err != nil {
			d.internalError(w, r, fmt.Errorf("retry jobs (after %d done): %w", res.jobs, err))
			return
		}
		d.log.Info("dashboard: bulk job retry", "jobs", res.jobs, "workflows", len(res.workflows))
		d.done(w, r, back, res.message())
		return
	}
	n, failed := 0, 0
	for _, id := range ids {
		var err error
		switch action {
		case "bury":
			err = s.Client.BuryJob(r.Context(), id, "Buried by an operator from the dashboard.")
		case "delete":
			err = s.Client.DeleteJob(r.Context(), id)
		}
		switch {
		case errors.Is(err, store.ErrJobNotFound):
			failed++
		case err != nil:
			d.internalError(w, r, fmt.Errorf("%s job %d (after %d done): %w", action, id, n, err))
			return
		default:
			n++
		}
	}
	d.log.Info("dashboard: bulk job action", "action", action, "jobs", n)
	msg := fmt.Sprintf("%s: %d jobs.", verb(action), n)
	if failed > 0 {
		msg += fmt.Sprintf(" %d no longer existed.", failed)
	}
	d.done(w, r, back, msg)
}

// jobMatching is what "all matching" means for action: the filter's jobs
// counted by status, and acted on only in the statuses the action touches.
func jobMatching(st *store.Store, q store.JobQuery, action string) matching {
	statuses := store.Statuses
	if q.Status != "" {
		statuses = []string{q.Status}
	}
	in := func(s string) store.JobQuery { q := q; q.Status = s; return q }
	return statusMatching(statuses, jobActionStatuses[action],
		func(ctx context.Context, s string, upTo int) (int, error) { return st.CountJobs(ctx, in(s), upTo) },
		func(ctx context.Context, s string, limit int) ([]int64, error) { return st.JobIDs(ctx, in(s), limit) })
}

func verb(action string) string {
	switch action {
	case "retry":
		return "Retried"
	case "bury":
		return "Buried"
	case "delete":
		return "Deleted"
	case "cancel":
		return "Cancelled"
	case "pause":
		return "Paused"
	case "resume":
		return "Resumed"
	}
	return action
}

// selectedIDs reads the form's id checkboxes.
func selectedIDs(r *http.Request) ([]int64, error) {
	raw := r.PostForm["id"]
	if len(raw) == 0 {
		return nil, errors.New("No rows selected: tick some, or use the action on all matching.")
	}
	if len(raw) > bulkLimit {
		return nil, fmt.Errorf("At most %d rows at once.", bulkLimit)
	}
	ids := make([]int64, 0, len(raw))
	for _, s := range raw {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 1 {
			return nil, fmt.Errorf("Row id %q is not a number.", s)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

type confirmData struct {
	Action, Kind string
	Count        int
	More         bool
	Post, Back   string
	Fields       url.Values
	Limit        int
	// ByStatus splits the matching rows by status, when the action touches
	// only some statuses: Count is then the touched ones.
	ByStatus []statusCount
}

// statusCount is how many matching rows have one status, and whether the
// action touches them.
type statusCount struct {
	Status  string
	N       int
	Touched bool
}

// Touched lists the statuses the action takes ("5 buried, 2 failed").
func (c confirmData) Touched() string { return c.statusList(true) }

// Left lists the statuses left as they are.
func (c confirmData) Left() string { return c.statusList(false) }

func (c confirmData) statusList(touched bool) string {
	var parts []string
	for _, s := range c.ByStatus {
		if s.Touched == touched {
			parts = append(parts, fmt.Sprintf("%d %s", s.N, s.Status))
		}
	}
	return strings.Join(parts, ", ")
}

func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request, c confirmData) {
	d.render(w, r, http.StatusOK, "confirm", view{Title: "Confirm", Nav: c.Kind, Data: c})
}
