package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// The pages beyond jobs and workflows: schedules, batches, state
// machines, webhooks, and workers with their sessions. Each reads a
// bounded number of rows.
const (
	listRows      = 200 // batches and machines listed
	batchJobRows  = 500 // jobs shown on a batch's page
	machineEvents = 500
	// phpSeenWindow is how far back a job run by the plugin's PHP
	// workers counts as a sign of them.
	phpSeenWindow = time.Hour
)

// pathID reads the {id} path segment.
func (d *Dashboard) pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("A %s id is a positive whole number.", what))
		return 0, false
	}
	return id, true
}

// schedules is GET /ui/schedules.
func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request, s *site) {
	rows, err := s.Client.Schedules(r.Context())
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "schedules", view{Title: "Schedules", Nav: "schedules", Data: rows})
}

// scheduleAction is POST /ui/schedules/{id}/pause|resume|run: pause and
// resume set the row's enabled flag (the tick of the plugin and of the
// daemon only takes enabled rows); run makes it due now, so the next tick
// dispatches it once under its overlap policy.
func (d *Dashboard) scheduleAction(w http.ResponseWriter, r *http.Request, s *site) {
	id, ok := d.pathID(w, r, "schedule")
	if !ok {
		return
	}
	st := s.store()
	sch, err := st.GetSchedule(r.Context(), id)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	if sch == nil {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("Schedule #%d does not exist.", id))
		return
	}
	var msg string
	switch action := r.PathValue("action"); action {
	case "pause", "resume":
		err = st.SetScheduleEnabled(r.Context(), id, action == "resume")
		msg = fmt.Sprintf("Schedule %s %sd.", sch.Handler, action)
	case "run":
		if !sch.Enabled {
			d.done(w, r, s.base+"schedules", fmt.Sprintf("Schedule %s is paused: resume it first.", sch.Handler))
			return
		}
		err = st.RunScheduleNow(r.Context(), id, st.Now())
		msg = fmt.Sprintf("Schedule %s is due now: the next scheduler tick dispatches it.", sch.Handler)
	default:
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("No schedule action %s (pause, resume or run).", store.QuotePrefix(action, 40)))
		return
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.log.Info("dashboard: schedule "+r.PathValue("action"), "schedule", id, "handler", sch.Handler)
	d.done(w, r, s.base+"schedules", msg)
}

// batchView is one batch with what the pages show of it.
type batchView struct {
	Row      store.BatchRow
	Name     string
	Progress int // percent of jobs no longer pending
	Done     int64
	State    string
	// Callbacks: then, catch and finally, each with its class and
	// whether it has fired by the rules the worker applies.
	Callbacks     []batchCallback
	AllowFailures bool
	FailedIDs     []int64
}

type batchCallback struct {
	Kind, Class, State string
}

func batchViewOf(row store.BatchRow) batchView {
	v := batchView{Row: row, Name: row.Name.String, Done: row.TotalJobs - row.PendingJobs}
	if row.TotalJobs > 0 {
		v.Progress = int(v.Done * 100 / row.TotalJobs)
	} else {
		v.Progress = 100
	}
	switch {
	case row.CancelledAt.Valid:
		v.State = "cancelled"
	case row.FinishedAt.Valid && row.FailedJobs > 0:
		v.State = "finished with failures"
	case row.FinishedAt.Valid:
		v.State = "completed"
	case row.FailedJobs > 0:
		v.State = "running, failing"
	default:
		v.State = "running"
	}
	opts := map[string]any{}
	if val, err := phpjson.DecodeString(row.Options); err == nil {
		if m, ok := val.ToGo().(map[string]any); ok {
			opts = m
		}
	}
	v.AllowFailures, _ = opts["allow_failures"].(bool)
	for _, kind := range []string{"then", "catch", "finally"} {
		class, _ := opts[kind].(string)
		if class == "" {
			continue
		}
		// BatchManager's rules: catch at the first failure, then when
		// every job is done without one, finally when the batch ends.
		state := "waiting"
		switch kind {
		case "catch":
			if row.FailedJobs > 0 {
				state = "fired"
			}
		case "then":
			if row.FinishedAt.Valid && (row.FailedJobs == 0 || v.AllowFailures) && !row.CancelledAt.Valid {
				state = "fired"
			} else if row.FailedJobs > 0 && !v.AllowFailures {
				state = "will not fire"
			}
		case "finally":
			if row.FinishedAt.Valid {
				state = "fired"
			}
		}
		v.Callbacks = append(v.Callbacks, batchCallback{Kind: kind, Class: class, State: state})
	}
	if val, err := phpjson.DecodeString(row.FailedJobIDs); err == nil {
		if l, ok := val.AsList(); ok {
			for _, e := range l {
				if n, ok := e.AsInt64(); ok {
					v.FailedIDs = append(v.FailedIDs, n)
				}
			}
		}
	}
	return v
}

// batches is GET /ui/batches.
func (d *Dashboard) batches(w http.ResponseWriter, r *http.Request, s *site) {
	rows, err := s.store().ListBatches(r.Context(), listRows)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	out := make([]batchView, len(rows))
	for i, row := range rows {
		out[i] = batchViewOf(row)
	}
	d.render(w, r, http.StatusOK, "batches", view{Title: "Batches", Nav: "batches", Data: out})
}

type batchData struct {
	B    batchView
	Jobs []store.JobRow
}

// batch is GET /ui/batches/{id}.
func (d *Dashboard) batch(w http.ResponseWriter, r *http.Request, s *site) {
	id, ok := d.pathID(w, r, "batch")
	if !ok {
		return
	}
	st := s.store()
	row, err := st.GetBatch(r.Context(), id)
	if errors.Is(err, store.ErrBatchNotFound) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("Batch #%d does not exist.", id))
		return
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	jobs, err := st.BatchJobs(r.Context(), id, batchJobRows)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "batch", view{Title: fmt.Sprintf("Batch #%d", id), Nav: "batches", Data: batchData{B: batchViewOf(row), Jobs: jobs}})
}

// machines is GET /ui/machines.
func (d *Dashboard) machines(w http.ResponseWriter, r *http.Request, s *site) {
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(machineStatuses, status) {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown state machine status %s (%s).", store.QuotePrefix(status, 40), strings.Join(machineStatuses, ", ")))
		return
	}
	list, err := s.Client.Machines(r.Context(), status, listRows)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "machines", view{Title: "State machines", Nav: "machines",
		Data: struct {
			Status   string
			Statuses []string
			Machines []machine.Status
		}{status, machineStatuses, list}})
}

// machineStatuses are the state machine list's status choices (the
// plugin's StateMachineStatus).
var machineStatuses = []string{"running", "waiting_event", "completed", "failed", "cancelled"}

type machineData struct {
	M      machine.Status
	State  string
	Events []machine.Event
}

// machine is GET /ui/machines/{id}: the current state, the events it
// accepts there, its state data and its event log.
func (d *Dashboard) machine(w http.ResponseWriter, r *http.Request, s *site) {
	id, ok := d.pathID(w, r, "state machine")
	if !ok {
		return
	}
	c := s.Client
	m, err := c.Machine(r.Context(), id)
	if errors.Is(err, store.ErrMachineNotFound) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("State machine #%d does not exist.", id))
		return
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	events, err := c.MachineTimeline(r.Context(), id, machineEvents)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "machine", view{Title: fmt.Sprintf("State machine #%d", id), Nav: "machines",
		Data: machineData{M: m, State: indentJSON(string(m.State)), Events: events}})
}

type webhooksData struct {
	Hooks []webhookRow
	// Sending: this process runs a worker that sends webhooks, so the
	// delivery columns are its counts.
	Sending bool
	// Removed are deliveries to webhooks no longer registered.
	Removed []queuety.WebhookDelivery
}

type webhookRow struct {
	queuety.WebhookRow
	D queuety.WebhookDelivery // zero: nothing sent to it by this process
}

// webhooks is GET /ui/webhooks: the registrations (the plugin's webhooks
// table) with what this process's worker delivered to each. Neither the
// plugin nor the daemon keeps a delivery log in the tables: each worker
// counts its own in memory (and in queuety_webhook_requests_total), so the
// page shows this process's deliveries and says where the others are.
func (d *Dashboard) webhooks(w http.ResponseWriter, r *http.Request, s *site) {
	hooks, err := s.Client.Webhooks(r.Context())
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	data := webhooksData{Sending: s.WebhookDeliveries != nil}
	byID := map[int64]queuety.WebhookDelivery{}
	if data.Sending {
		for _, dl := range s.WebhookDeliveries() {
			byID[dl.WebhookID] = dl
		}
	}
	for _, h := range hooks {
		data.Hooks = append(data.Hooks, webhookRow{WebhookRow: h, D: byID[h.ID]})
		delete(byID, h.ID)
	}
	for _, dl := range byID {
		data.Removed = append(data.Removed, dl)
	}
	slices.SortFunc(data.Removed, func(a, b queuety.WebhookDelivery) int { return cmp.Compare(a.WebhookID, b.WebhookID) })
	d.render(w, r, http.StatusOK, "webhooks", view{Title: "Webhooks", Nav: "webhooks", Data: data})
}

type workersData struct {
	Workers  []sessions.Worker
	Runtimes map[string]int // live registrations per runtime
	// PHPQueues are queues on which the plugin's PHP workers ran a job
	// within PHPWindow: they do not register, the job rows are the only
	// sign of them.
	PHPQueues []string
	PHPWindow time.Duration
	Sessions  []store.SessionRow
}

// workers is GET /ui/workers: every registration (queuety-go, external
// workers in any runtime), the PHP workers seen in the job rows, and the
// worker sessions.
func (d *Dashboard) workers(w http.ResponseWriter, r *http.Request, s *site) {
	c := s.Client
	st := s.store()
	list, err := c.Workers(r.Context(), d.cfg.Namespace)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	data := workersData{Workers: list, Runtimes: map[string]int{}, PHPWindow: phpSeenWindow}
	for _, wk := range list {
		if !wk.IsStale {
			data.Runtimes[wk.Runtime]++
		}
	}
	if data.PHPQueues, err = st.PHPSeenQueues(r.Context(), st.Now().Add(-phpSeenWindow)); err != nil {
		d.internalError(w, r, err)
		return
	}
	ns := d.cfg.Namespace
	if ns == "" {
		ns = sessions.DefaultNamespace
	}
	if data.Sessions, err = st.Sessions().ListSessions(r.Context(), ns); err != nil {
		d.internalError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "workers", view{Title: "Workers", Nav: "workers", Data: data})
}
