package cli

import (
	"context"
	"errors"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// httpTasks serves the HTTP worker plane's activity-task routes from the
// job runtime (queuety.Tasks).
type httpTasks struct{ t *queuety.Tasks }

var _ httpapi.Tasks = httpTasks{}

func (h httpTasks) Poll(ctx context.Context, p httpapi.TaskPoll) (*httpapi.Task, error) {
	ct, err := h.t.Poll(ctx, p.Namespace, p.WorkerID, p.Queues, p.AllowSessions)
	if err != nil || ct == nil {
		return nil, err
	}
	j := ct.Job
	task := &httpapi.Task{
		JobID: j.ID, Attempt: j.Attempts, Handler: j.Handler, Queue: j.Queue, Payload: []byte(j.Payload),
		LeaseExpiresAt: ct.LeaseExpiresAt, WorkerSession: ct.Session,
	}
	task.WorkflowID = j.WorkflowID
	if j.StepIndex != nil {
		i := int(*j.StepIndex)
		task.StepIndex = &i
	}
	return task, nil
}

func (h httpTasks) Heartbeat(ctx context.Context, hb httpapi.TaskHeartbeat) (httpapi.TaskHeartbeatResult, error) {
	r, err := h.t.Heartbeat(ctx, hb.Namespace, hb.WorkerID, hb.JobID, hb.Attempt, hb.Progress)
	if reason, msg, ok := taskRefusal(err); ok {
		return httpapi.TaskHeartbeatResult{Reason: reason, Error: msg}, nil
	}
	if err != nil {
		return httpapi.TaskHeartbeatResult{}, err
	}
	out := httpapi.TaskHeartbeatResult{Recorded: r.Recorded, CanContinue: r.Recorded, LeaseExpiresAt: r.LeaseExpiresAt, Session: r.Session, Renewal: r.Renewal}
	if r.Renewal != nil {
		out.Reason, out.Error = r.Renewal.Reason, r.Renewal.Error
	}
	return out, nil
}

func (h httpTasks) Complete(ctx context.Context, c httpapi.TaskCompletion) (httpapi.TaskOutcome, error) {
	err := h.t.Complete(ctx, c.WorkerID, c.JobID, c.Attempt)
	if reason, msg, ok := taskRefusal(err); ok {
		return httpapi.TaskOutcome{Reason: reason, Error: msg}, nil
	}
	if err != nil {
		return httpapi.TaskOutcome{}, err
	}
	return httpapi.TaskOutcome{Recorded: true, JobStatus: store.StatusCompleted}, nil
}

func (h httpTasks) Fail(ctx context.Context, f httpapi.TaskFailure) (httpapi.TaskOutcome, error) {
	buried, err := h.t.Fail(ctx, queuety.TaskFailure{
		WorkerID: f.WorkerID, JobID: f.JobID, Attempt: f.Attempt, Message: f.Message,
		ExceptionType: f.ExceptionType, NonRetryable: f.NonRetryable,
	})
	if reason, msg, ok := taskRefusal(err); ok {
		return httpapi.TaskOutcome{Reason: reason, Error: msg}, nil
	}
	if err != nil {
		return httpapi.TaskOutcome{}, err
	}
	status := store.StatusPending
	if buried {
		status = store.StatusBuried
	}
	return httpapi.TaskOutcome{Recorded: true, JobStatus: status}, nil
}

// taskRefusal maps the runtime's refusals onto the worker plane's reasons.
func taskRefusal(err error) (reason, msg string, ok bool) {
	switch {
	case errors.Is(err, store.ErrJobNotFound):
		return "task_not_found", err.Error(), true
	case errors.Is(err, queuety.ErrStaleAttempt):
		return "stale_attempt", "The attempt no longer holds this task (rescued, re-claimed or already settled); its result was not recorded.", true
	}
	return "", "", false
}
