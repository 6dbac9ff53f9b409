package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// workflowStatuses are the workflow list's status choices.
var workflowStatuses = []string{"running", "waiting_for_signal", "waiting_for_workflows", "paused", "completed", "failed", "cancelled"}

func listFilter(status string, limit int) queuety.WorkflowFilter {
	return queuety.WorkflowFilter{Status: status, Limit: limit}
}

type workflowFilter struct {
	Status, Name, Since, Error string
	Page                       int
}

func readWorkflowFilter(v url.Values) workflowFilter {
	f := workflowFilter{Status: v.Get("status"), Name: strings.TrimSpace(v.Get("name")), Since: v.Get("since"), Error: strings.TrimSpace(v.Get("error"))}
	f.Page, _ = strconv.Atoi(v.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

func (f workflowFilter) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"status": f.Status, "name": f.Name, "since": f.Since, "error": f.Error} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

func (s *site) workflowQuery(f workflowFilter) (store.WorkflowQuery, error) {
	q := store.WorkflowQuery{Status: f.Status, Name: f.Name, ErrorText: f.Error}
	if f.Status != "" && !slices.Contains(workflowStatuses, f.Status) {
		return q, fmt.Errorf("unknown workflow status %q", f.Status)
	}
	since, err := parseSince(f.Since, s.store().Now())
	q.Since = since
	return q, err
}

type workflowsData struct {
	Filter             workflowFilter
	Statuses           []string
	Since              any
	Workflows          []store.WorkflowRow
	Matching           int
	More               bool
	PrevPage, NextPage string
	BulkLimit          int
	// DefaultAction is the bulk action selected first ("": none).
	DefaultAction string
}

func (d *Dashboard) workflows(w http.ResponseWriter, r *http.Request, s *site) {
	f := readWorkflowFilter(r.URL.Query())
	page, err := readPage(r.URL.Query())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Page = page
	q, err := s.workflowQuery(f)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	st := s.store()
	rows, err := st.QueryWorkflows(r.Context(), q, pageSize, (f.Page-1)*pageSize)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	n, err := st.CountMatchingWorkflows(r.Context(), q, countLimit+1)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	data := workflowsData{Filter: f, Statuses: workflowStatuses, Since: sinceChoices, Workflows: rows,
		Matching: min(n, countLimit), More: n > countLimit, BulkLimit: bulkLimit, DefaultAction: defaultWorkflowAction(f.Status)}
	data.PrevPage, data.NextPage = pages(f.values(), f.Page, len(rows) == pageSize)
	d.render(w, r, http.StatusOK, "workflows", view{Title: "Workflows", Nav: "workflows", Data: data})
}

// stepView is one step of the strip.
type stepView struct {
	Index int
	Name  string
	Type  string
	// State: done, current, failed or pending.
	State string
}

type workflowData struct {
	W        *workflow.StatusReport
	Steps    []stepView
	Timeline template.HTML
	Events   []workflow.TimelineEvent
	State    string
	Waiting  bool
	Live     bool
	// Running: pause applies (the plugin pauses running workflows only;
	// a waiting one answers "is not running").
	Running  bool
	Paused   bool
	Failed   bool
	Approval string
}

func (d *Dashboard) workflow(w http.ResponseWriter, r *http.Request, s *site) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "A workflow id is a number.")
		return
	}
	c := s.Client
	rep, err := c.WorkflowStatus(r.Context(), id)
	if errors.Is(err, store.ErrWorkflowNotFound) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("Workflow #%d does not exist.", id))
		return
	}
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	row, err := clientstore.Of(c).GetWorkflow(r.Context(), id)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	events, err := c.WorkflowTimeline(r.Context(), id, 0, 500)
	if err != nil {
		d.internalError(w, r, err)
		return
	}
	data := workflowData{W: rep, Events: events, Steps: stepStrip(row, rep)}
	names := make([]string, len(data.Steps))
	for i, st := range data.Steps {
		names[i] = st.Name
	}
	data.Timeline = timelineChart(events, names)
	if b, err := json.Marshal(rep.State); err == nil {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			data.State = buf.String()
		}
	}
	switch rep.Status {
	case workflow.StatusWaitingForSignal:
		data.Waiting, data.Live = true, true
		data.Approval = approvalSignal(rep.WaitingFor)
	case workflow.StatusRunning:
		data.Live, data.Running = true, true
	case workflow.StatusWaitingForWorkflows:
		data.Live = true
	case workflow.StatusPaused:
		data.Paused = true
	case workflow.StatusFailed:
		data.Failed = true
	}
	d.render(w, r, http.StatusOK, "workflow", view{Title: fmt.Sprintf("Workflow #%d", id), Nav: "workflows", Data: data})
}

// approvalSignal is the signal "approve" sends: the one the workflow
// waits for, unless that is the rejection.
func approvalSignal(waitingFor []string) string {
	for _, s := range waitingFor {
		if s != queuety.SignalRejected {
			return s
		}
	}
	return queuety.SignalApproval
}

// stepStrip lists the definition's steps with where the workflow is.
func stepStrip(row *store.WorkflowRow, rep *workflow.StatusReport) []stepView {
	state, err := workflow.ParseState([]byte(row.State))
	if err != nil {
		return nil
	}
	steps := state.Steps()
	out := make([]stepView, 0, len(steps))
	for i, s := range steps {
		v := stepView{Index: i, Name: s.Name(i), Type: string(s.Type())}
		if v.Name == strconv.Itoa(i) && s.Class() != "" {
			v.Name = s.Class() // an unnamed step (named by its index) is known by its handler
		}
		switch {
		case rep.Status == workflow.StatusCompleted || i < rep.CurrentStep:
			v.State = "done"
		case i == rep.CurrentStep && rep.Status == workflow.StatusFailed:
			v.State = "failed"
		case i == rep.CurrentStep && rep.Status != workflow.StatusCancelled:
			v.State = "current"
		default:
			v.State = "pending"
		}
		out = append(out, v)
	}
	return out
}

// workflowAction is POST /ui/workflows/{id}/{action}.
func (d *Dashboard) workflowAction(w http.ResponseWriter, r *http.Request, s *site) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "A workflow id is a number.")
		return
	}
	action := r.PathValue("action")
	back := fmt.Sprintf("%sworkflows/%d", s.base, id)
	if to := r.PostFormValue("back"); to != "" {
		back = to
	}
	c := s.Client
	switch action {
	case "approve":
		err = c.Approve(r.Context(), id, nil, r.PostFormValue("signal"))
	case "reject":
		err = c.Reject(r.Context(), id, nil)
	default:
		err = s.lifecycle(r.Context(), action, id)
	}
	if errors.Is(err, errUnknownAction) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("No workflow action %s.", store.QuotePrefix(action, 40)))
		return
	}
	// A signal name the column cannot hold is the caller's mistake: 400
	// with the reason, not the server's "Data too long" (N14).
	if errors.Is(err, store.ErrInvalidName) {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Workflow #%d: %s not sent: %v.", id, action, err))
		return
	}
	if err != nil {
		if workflow.IsLifecycleError(err) || errors.Is(err, store.ErrWorkflowNotFound) {
			d.done(w, r, back, err.Error())
			return
		}
		d.internalError(w, r, err)
		return
	}
	d.log.Info("dashboard: workflow "+action, "workflow_id", id)
	d.done(w, r, back, fmt.Sprintf("Workflow #%d: %s sent.", id, action))
}

var errUnknownAction = errors.New("unknown action")

// lifecycle runs pause, resume, cancel or retry, as `queuety workflow` does.
func (s *site) lifecycle(ctx context.Context, action string, id int64) error {
	c, reg := s.Client, s.Registry
	switch action {
	case "pause":
		return c.PauseWorkflow(ctx, id)
	case "resume":
		return c.ResumeWorkflow(ctx, id, reg)
	case "cancel":
		return c.CancelWorkflow(ctx, id, reg)
	case "retry":
		return c.RetryWorkflow(ctx, id, reg)
	}
	return errUnknownAction
}

// workflowActionStatuses are the statuses each bulk workflow action
// touches on "all matching" (the engine refuses the others anyway).
var workflowActionStatuses = map[string][]string{
	"cancel": {"running", "waiting_for_signal", "waiting_for_workflows", "paused"},
	"retry":  {"failed"},
	"pause":  {"running", "waiting_for_signal", "waiting_for_workflows"},
	"resume": {"paused"},
}

// defaultWorkflowAction is the bulk action a workflows page offers first,
// by the status it shows: retry for failed, resume for paused, none
// otherwise (the operator picks one).
func defaultWorkflowAction(status string) string {
	switch status {
	case "failed":
		return "retry"
	case "paused":
		return "resume"
	}
	return ""
}

// bulkWorkflows is POST /ui/workflows/bulk: cancel, retry, pause or
// resume on a selection or on all matching in the statuses the action
// touches (confirmed first, with the count by status).
func (d *Dashboard) bulkWorkflows(w http.ResponseWriter, r *http.Request, s *site) {
	action := r.PostFormValue("action")
	if _, ok := workflowActionStatuses[action]; !ok {
		msg := fmt.Sprintf("Unknown bulk action %q (cancel, retry, pause or resume).", action)
		if action == "" {
			msg = "Choose an action first: cancel, retry, pause or resume."
		}
		d.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	f := readWorkflowFilter(r.PostForm)
	st := s.store()
	back := s.base + "workflows?" + f.values().Encode()
	ids, ok := d.bulkIDs(w, r, bulkSelection{
		action: action, kind: "workflows", post: s.base + "workflows/bulk", back: back, fields: f.values(),
		match: func() (matching, error) {
			q, err := s.workflowQuery(f)
			statuses := workflowStatuses
			if q.Status != "" {
				statuses = []string{q.Status}
			}
			in := func(s string) store.WorkflowQuery { q := q; q.Status = s; return q }
			return statusMatching(statuses, workflowActionStatuses[action],
				func(ctx context.Context, s string, upTo int) (int, error) {
					return st.CountMatchingWorkflows(ctx, in(s), upTo)
				},
				func(ctx context.Context, s string, limit int) ([]int64, error) {
					return st.WorkflowIDs(ctx, in(s), limit)
				}), err
		},
	})
	if !ok {
		return
	}
	n, refused := 0, 0
	for _, id := range ids {
		err := s.lifecycle(r.Context(), action, id)
		switch {
		case err == nil:
			n++
		case workflow.IsLifecycleError(err) || errors.Is(err, store.ErrWorkflowNotFound):
			refused++
		default:
			d.internalError(w, r, fmt.Errorf("%s workflow %d (after %d done): %w", action, id, n, err))
			return
		}
	}
	d.log.Info("dashboard: bulk workflow action", "action", action, "workflows", n)
	msg := fmt.Sprintf("%s: %d workflows.", verb(action), n)
	if refused > 0 {
		msg += fmt.Sprintf(" %d were not in a state that allows it.", refused)
	}
	d.done(w, r, back, msg)
}
