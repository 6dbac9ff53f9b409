package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// queuetyEventOf is the workflow_events name a history event is also
// written under ("" = history only). workflow.ActivityCompleted is the
// step_completed row the step's completion writes anyway.
func queuetyEventOf(name string) string {
	switch name {
	case workflow.ActivityStarted:
		return workflow.EventStepStarted
	case workflow.ActivityRetryScheduled, workflow.ActivityFailed, workflow.ActivityTimedOut, workflow.ActivityCancelled:
		return workflow.EventStepFailed
	}
	return ""
}

// localContext reads the markers of an event context.
func localContext(ctx phpjson.Value) (activityEvent string, local bool) {
	o, ok := ctx.AsObject()
	if !ok {
		return "", false
	}
	v, _ := o.Get("local_activity")
	b, _ := v.AsBool()
	name, _ := phpjson.Get(o, "activity_event").AsString()
	return name, b
}

// annotateLocal fills a timeline event's local activity fields.
func annotateLocal(ev *workflow.TimelineEvent) {
	name, local := localContext(ev.Context)
	if !local {
		return
	}
	mode := "local"
	ev.ExecutionMode = &mode
	ev.LocalActivity = true
	ev.ActivityEvent = name
}

// ActivityHeartbeat records progress for the local activity whose handler
// ctx belongs to (durable-workflow's $this->heartbeat()): it renews the
// workflow task lease (jobs.reserved_at, progress in heartbeat_data),
// moves the heartbeat deadline, updates the attempt and writes a
// step_heartbeat event. progress is any JSON-able value (nil for none).
//
// It returns ErrActivityCancelled when the workflow is no longer running
// (cancellation is cooperative: the activity should return), an
// *ActivityTimeoutError when a deadline already passed, ErrActivityLost
// when the attempt no longer holds its workflow task, and an error when
// ctx is not a local activity's.
func ActivityHeartbeat(ctx context.Context, progress any) error {
	sc, ok := ctx.Value(localScopeKey{}).(*localScope)
	if !ok {
		return errors.New("ActivityHeartbeat: the context is not a local activity's (only a local_activity step's handler can heartbeat)")
	}
	var body []byte
	if progress != nil {
		v, err := toValue(progress)
		if err != nil {
			return err
		}
		if body, err = phpjson.Encode(v); err != nil {
			return err
		}
	}
	return sc.e.heartbeat(context.WithoutCancel(ctx), sc.att, body)
}

func (e *Engine) heartbeat(ctx context.Context, att *localAttempt, progress []byte) error {
	var outcome error
	err := e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		outcome = nil
		a := &Advance{e: e, tx: tx}
		x, err := a.lockLocal(att.job.WorkflowID.Int64, att.job.ID)
		if err != nil {
			return err
		}
		if !workflow.IsLive(a.wf.Status) {
			outcome = workflow.ErrActivityCancelled
			return nil
		}
		if x == nil || x.Status != store.ActivityRunning || x.CurrentAttemptID.String != att.id ||
			a.job.Status != store.StatusProcessing || a.job.ReservedBy != att.job.ReservedBy || a.job.Attempts != att.job.Attempts {
			outcome = workflow.ErrActivityLost
			return nil
		}
		now := e.store.PreciseNow()
		if kind, at := passedDeadline(x, now); kind != "" {
			outcome = &workflow.ActivityTimeoutError{Kind: kind, Message: timeoutMessage(att.policy.Class, kind, at, nullTimeOf(x.LastHeartbeatAt))}
			return nil
		}
		if err := a.loadState(); err != nil {
			return err
		}
		var hb time.Time
		if att.policy.Heartbeat > 0 {
			hb = now.Add(time.Duration(att.policy.Heartbeat) * time.Second).Truncate(time.Millisecond)
		}
		lease := now.Add(e.localLease())
		if _, err := tx.RenewJobLease(att.job.ID, att.job.ReservedBy.String, att.job.Attempts, progress); err != nil {
			return err
		}
		p := phpjson.Null()
		if progress != nil {
			if p, err = phpjson.Decode(progress); err != nil {
				return err
			}
		}
		c := localMarkers(x.ID, att.policy.Class, a.job, att.index).
			Set("activity_attempt_id", phpjson.String(att.id)).
			Set("attempt_number", phpjson.Int(int64(att.number))).
			Set("heartbeat_at", timeValue(now)).
			Set("lease_expires_at", timeValue(lease)).
			Set("heartbeat_deadline_at", timeValue(hb)).
			Set("progress", p)
		if err := a.localEvent(x, workflow.ActivityHeartbeatRecorded, att.index, c, phpjson.Null(), now); err != nil {
			return err
		}
		if err := tx.HeartbeatActivity(x.ID, att.id, now, hb, lease, progress, historyBytes(x)); err != nil {
			return err
		}
		att.mu.Lock()
		att.hb = hb
		att.history = historyBytes(x)
		att.mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case att.beat <- struct{}{}:
	default:
	}
	if outcome != nil && att.cancel != nil && !errors.Is(outcome, workflow.ErrActivityLost) {
		// Observed at a heartbeat: the handler's context ends too.
		att.cancel(outcome)
	}
	return outcome
}

// msTime is a time as durable-workflow's history and messages write it
// (UTC, milliseconds).
func msTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

func optTime(v sql.NullTime) *string {
	t := nullTimeOf(v)
	if t.IsZero() {
		return nil
	}
	s := msTime(t)
	return &s
}

func jsonColumn(valid bool, s string) phpjson.Value {
	if !valid {
		return phpjson.Null()
	}
	v, err := phpjson.DecodeString(s)
	if err != nil {
		return phpjson.String(s)
	}
	return v
}

// LocalActivities lists a workflow's local activity executions with their
// attempts (empty when it has none).
func (e *Engine) LocalActivities(ctx context.Context, workflowID int64) ([]workflow.LocalActivityView, error) {
	xs, err := e.store.ActivityExecutions(ctx, workflowID)
	if err != nil || len(xs) == 0 {
		return nil, err
	}
	atts, err := e.store.ActivityAttempts(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	by := map[int64][]workflow.LocalActivityAttempt{}
	for _, t := range atts {
		by[t.ExecutionID] = append(by[t.ExecutionID], workflow.LocalActivityAttempt{
			ID: t.ID, AttemptNumber: t.AttemptNumber, Status: t.Status,
			RetryReason:  exNullStr(t.RetryReason.String, t.RetryReason.Valid),
			TimeoutKind:  exNullStr(t.TimeoutKind.String, t.TimeoutKind.Valid),
			LeaseOwner:   exNullStr(t.LeaseOwner.String, t.LeaseOwner.Valid),
			ErrorMessage: exNullStr(t.ErrorMessage.String, t.ErrorMessage.Valid),
			ErrorClass:   exNullStr(t.ErrorClass.String, t.ErrorClass.Valid),
			Progress:     jsonColumn(t.Progress.Valid, t.Progress.String),
			StartedAt:    msTime(t.StartedAt), LastHeartbeat: optTime(t.LastHeartbeatAt),
			LeaseExpiresAt: optTime(t.LeaseExpiresAt), ClosedAt: optTime(t.ClosedAt),
		})
	}
	out := make([]workflow.LocalActivityView, len(xs))
	for i, x := range xs {
		out[i] = workflow.LocalActivityView{
			ID: x.ID, StepIndex: x.StepIndex, JobID: x.JobID, ActivityType: x.ActivityType,
			ExecutionMode: x.ExecutionMode, LocalActivity: x.ExecutionMode == "local", QueueBypassed: x.QueueBypassed,
			Status: x.Status, AttemptCount: x.AttemptCount,
			ActivityOptions: jsonColumn(true, x.ActivityOptions), RetryPolicy: jsonColumn(true, x.RetryPolicy),
			Result:    jsonColumn(x.Result.Valid, x.Result.String),
			LastError: exNullStr(x.LastError.String, x.LastError.Valid), TimeoutKind: exNullStr(x.TimeoutKind.String, x.TimeoutKind.Valid),
			ScheduleToCloseDeadlineAt: optTime(x.ScheduleToCloseDeadlineAt),
			StartedAt:                 optTime(x.StartedAt), ClosedAt: optTime(x.ClosedAt),
			Attempts: by[x.ID],
			History:  jsonColumn(x.History.Valid, x.History.String),
		}
		if out[i].Attempts == nil {
			out[i].Attempts = []workflow.LocalActivityAttempt{}
		}
	}
	return out, nil
}

// exportActivities is the export's "activities" list (only written for
// workflows that have local activities, so plugin exports stay as they
// are).
func (e *Engine) exportActivities(ctx context.Context, workflowID int64) (phpjson.Value, bool, error) {
	views, err := e.LocalActivities(ctx, workflowID)
	if err != nil || len(views) == 0 {
		return phpjson.Null(), false, err
	}
	v, err := toValue(views)
	return v, err == nil, err
}

// toValue converts plain Go values (phpjson.FromGo) and, through
// encoding/json, structs with json tags.
func toValue(x any) (phpjson.Value, error) {
	if v, err := phpjson.FromGo(x); err == nil {
		return v, nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return phpjson.Null(), err
	}
	return phpjson.Decode(b)
}

// ActivityMetrics returns the operator counts of local and queued
// activities (see store.ActivityMetrics for what each counts).
func (e *Engine) ActivityMetrics(ctx context.Context) (store.ActivityMetrics, error) {
	return e.store.ActivityMetrics(ctx)
}
