package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Bounds of the first screen's reads.
const (
	buriedScan     = 10000 // newest buried rows grouped
	buriedGroups   = 20
	attentionRows  = 20
	throughputMins = 24 * 60
	sessionScan    = 5000 // pending session-bound jobs checked against the workers
)

// queueRow is one line of the queues table.
type queueRow struct {
	Queue                       string
	Pending, Processing, Buried int
	Failed, CompletedLastHour   int
	OldestPendingAge            time.Duration
	Paused                      bool
}

// overviewData is the first screen.
type overviewData struct {
	Queues []queueRow
	// Unserved are queues with pending jobs that no live registered
	// worker serves (PHP's workers do not register: they may still run).
	Unserved        []queueRow
	Unadmitted      []queuety.UnadmittedSessionJobs
	BuriedGroups    []buriedGroup
	Stale           []store.StaleJob
	StaleAfter      time.Duration
	Stuck           []store.StuckJob
	FailedWorkflows []*workflow.StatusReport
	Waiting         []waitingWorkflow
	Workers         []sessions.Worker
	// PHPQueues: queues the plugin's PHP workers ran jobs on within
	// phpSeenWindow (they do not register).
	PHPQueues []string
	Pool      *phppool.Stats
	// Throughput of the last hour (per minute) and day (per 15 minutes).
	HourChart, DayChart       template.HTML
	CompletedDay, FailedDay   int
	CompletedHour, FailedHour int
	PeakPerMinute             int
}

type waitingWorkflow struct {
	*workflow.StatusReport
	// Signal: waiting for a signal (approve/reject apply).
	Signal bool
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, s *site) {
	data, err := d.loadOverview(r.Context(), s)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Nav: "overview", Data: data})
}

func (d *Dashboard) loadOverview(ctx context.Context, s *site) (*overviewData, error) {
	c := s.Client
	st := clientstore.Of(c)
	out := &overviewData{}
	snap, err := st.MetricsSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue counts: %w", err)
	}
	done, err := st.CompletedLastHour(ctx)
	if err != nil {
		return nil, err
	}
	workers, err := c.Workers(ctx, d.cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	out.Workers = workers
	if out.PHPQueues, err = st.PHPSeenQueues(ctx, st.Now().Add(-phpSeenWindow)); err != nil {
		return nil, err
	}
	out.Queues = queueRows(snap, done, workers)
	out.Unserved = unserved(out.Queues, workers)
	if out.Unadmitted, err = c.UnadmittedSessionJobs(ctx, workers, sessionScan); err != nil {
		return nil, err
	}

	buried, err := st.BuriedScan(ctx, buriedScan)
	if err != nil {
		return nil, err
	}
	out.BuriedGroups = groupBuried(buried, buriedGroups)
	out.StaleAfter = c.Config().StaleTimeout
	if out.StaleAfter <= 0 {
		out.StaleAfter = 600 * time.Second
	}
	if out.Stale, err = st.StaleProcessing(ctx, st.Now().Add(-out.StaleAfter), attentionRows); err != nil {
		return nil, err
	}
	if out.Stuck, err = st.StuckJobs(ctx, store.StuckScan{Limit: attentionRows}); err != nil {
		return nil, err
	}
	if out.FailedWorkflows, err = c.ListWorkflows(ctx, listFilter(string(workflow.StatusFailed), attentionRows)); err != nil {
		return nil, err
	}
	for _, status := range []workflow.Status{workflow.StatusWaitingForSignal, workflow.StatusWaitingForWorkflows} {
		ws, err := c.ListWorkflows(ctx, listFilter(string(status), attentionRows))
		if err != nil {
			return nil, err
		}
		for _, wf := range ws {
			out.Waiting = append(out.Waiting, waitingWorkflow{StatusReport: wf, Signal: status == workflow.StatusWaitingForSignal})
		}
	}
	if s.PoolStats != nil {
		ps := s.PoolStats()
		out.Pool = &ps
	}
	tp, err := d.throughput(ctx, s)
	if err != nil {
		return nil, err
	}
	for i := range tp.completed {
		out.CompletedDay += tp.completed[i]
		out.FailedDay += tp.failed[i]
		out.PeakPerMinute = max(out.PeakPerMinute, tp.completed[i]+tp.failed[i])
	}
	hour := len(tp.completed) - 60
	for i := hour; i < len(tp.completed); i++ {
		out.CompletedHour += tp.completed[i]
		out.FailedHour += tp.failed[i]
	}
	out.HourChart = throughputChart(tp.completed[hour:], tp.failed[hour:], tp.since.Add(time.Duration(hour)*time.Minute), 1, "last hour, per minute")
	out.DayChart = throughputChart(tp.completed, tp.failed, tp.since, 15, "last 24 hours, per 15 minutes")
	return out, nil
}

// throughputTTL is how long a read of the day's throughput is reused: it
// reads a day of log rows, and refreshing the overview should not.
const throughputTTL = 15 * time.Second

// throughputCache holds the last read of the throughput.
type throughputCache struct {
	mu     sync.Mutex
	readAt time.Time
	last   *throughputRead
}

// throughputRead is attempts completed and failed per minute over the
// last 24 hours from since, the last column being the current minute.
type throughputRead struct {
	since             time.Time
	completed, failed []int
}

func (d *Dashboard) throughput(ctx context.Context, s *site) (*throughputRead, error) {
	c := s.tp
	c.mu.Lock()
	defer c.mu.Unlock()
	now := d.cfg.Now()
	if c.last != nil && now.Sub(c.readAt) < throughputTTL {
		return c.last, nil
	}
	st := s.store()
	since := st.Now().Truncate(time.Minute).Add(-(throughputMins - 1) * time.Minute)
	done, failed, err := st.Throughput(ctx, since, throughputMins)
	if err != nil {
		return nil, err
	}
	c.readAt, c.last = now, &throughputRead{since: since, completed: done, failed: failed}
	return c.last, nil
}

// queueRows merges the bounded counts into one row per queue: every queue
// with open jobs, jobs completed within the hour, a pause, or a worker.
func queueRows(snap store.MetricsSnapshot, done map[string]int, workers []sessions.Worker) []queueRow {
	rows := map[string]*queueRow{}
	get := func(q string) *queueRow {
		if r, ok := rows[q]; ok {
			return r
		}
		r := &queueRow{Queue: q}
		rows[q] = r
		return r
	}
	for _, j := range snap.Jobs {
		r := get(j.Queue)
		switch j.Status {
		case store.StatusPending:
			r.Pending = int(j.N)
		case store.StatusProcessing:
			r.Processing = int(j.N)
		case store.StatusBuried:
			r.Buried = int(j.N)
		case store.StatusFailed:
			r.Failed = int(j.N)
		}
	}
	for q, age := range snap.OldestPending {
		get(q).OldestPendingAge = time.Duration(age) * time.Second
	}
	for _, q := range snap.Paused {
		get(q).Paused = true
	}
	for q, n := range done {
		get(q).CompletedLastHour = n
	}
	for _, w := range workers {
		if w.IsStale {
			continue
		}
		for _, q := range w.Queues {
			get(q)
		}
	}
	out := make([]queueRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b queueRow) int {
		switch {
		case a.Queue < b.Queue:
			return -1
		case a.Queue > b.Queue:
			return 1
		}
		return 0
	})
	return out
}

// unserved picks the queues with pending jobs no live worker serves.
func unserved(queues []queueRow, workers []sessions.Worker) []queueRow {
	served := map[string]bool{}
	for _, w := range workers {
		if !w.IsStale {
			for _, q := range w.Queues {
				served[q] = true
			}
		}
	}
	var out []queueRow
	for _, q := range queues {
		if q.Pending > 0 && !served[q.Queue] {
			out = append(out, q)
		}
	}
	return out
}

// queueAction is POST /ui/queues/pause|resume with the queue in the form
// field "queue", or POST /ui/queues/{queue}/pause|resume with it as one
// path segment.
func (d *Dashboard) queueAction(w http.ResponseWriter, r *http.Request, s *site) {
	q, action := r.PathValue("queue"), r.PathValue("action")
	if !strings.HasSuffix(r.Pattern, queuePathRoute) {
		q = r.PostFormValue("queue")
	}
	if action != "pause" && action != "resume" {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("No queue action %s (pause or resume).", store.QuotePrefix(action, 40)))
		return
	}
	// The name rules first: a name the column cannot hold is a 400 with
	// the reason, not the server's "Data too long" as a 500 (N14).
	if err := queuety.ValidateQueue(q); err != nil {
		d.fail(w, r, http.StatusBadRequest, "Queue not "+action+"d: "+err.Error()+".")
		return
	}
	var err error
	if action == "pause" {
		err = s.Client.Pause(r.Context(), q)
	} else {
		err = s.Client.Resume(r.Context(), q)
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.log.Info("dashboard: queue "+action+"d", "queue", q)
	d.done(w, r, s.base, fmt.Sprintf("Queue %s %sd.", q, action))
}

// queuePathRoute is the route, below a site's pages, with the queue as
// its one path segment.
const queuePathRoute = "queues/{queue}/{action}"

// retryGroup is POST /ui/buried/retry: every buried job of one handler
// and error (at most bulkLimit per click).
func (d *Dashboard) retryGroup(w http.ResponseWriter, r *http.Request, s *site) {
	handler, class, pattern := r.PostFormValue("handler"), r.PostFormValue("class"), r.PostFormValue("pattern")
	ids, err := s.buriedGroupIDs(r.Context(), handler, class, pattern, bulkLimit)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	res, err := s.retryJobs(r.Context(), ids)
	if err != nil {
		d.internalError(w, r, fmt.Errorf("retry the buried %s jobs (after %d done): %w", handler, res.jobs, err))
		return
	}
	d.log.Info("dashboard: buried group retried", "handler", handler, "jobs", res.jobs, "workflows", len(res.workflows))
	d.done(w, r, s.base, res.messageAfter(fmt.Sprintf("%d buried %s jobs retried.", res.jobs, handler)))
}
