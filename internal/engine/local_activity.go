package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Local activities (seed 002, spec §3): a local_activity step runs in the
// worker that advanced the workflow, with no claim and no queue routing,
// and keeps the durability of an ordinary step.
//
// The step's job row is the durable "workflow task": its reserved_by,
// reserved_at and attempts are the lease every local attempt runs under.
// One activity_executions row per step job records the options snapshot,
// the attempt count and the outcome; one activity_attempts row per
// attempt.
//
//   - Happy path. When the step-completion transaction of a worker
//     (Engine.advance) enqueues a local activity, it inserts the job
//     already claimed by that worker (processing, attempts 1), creates the
//     execution and starts attempt 1 (attempt row, `started` log,
//     step_scheduled and step_started events), all in that transaction.
//     After the commit the worker runs the class at once in process (Go
//     step handler, or the PHP pool through the StepRunner), then commits
//     the outcome, which advances the workflow; a next local step starts
//     in that same transaction, and so on. A success writes the rows its
//     start committed without reading them again, fenced on them
//     (completeLocalFast): a local step sends no more statements than a
//     chained step (step_cost_test.go counts them).
//   - Other ways in. A first step (dispatch), a retry row, a row rescued
//     after a crash, or a step enqueued by a party that will not run it
//     (signal, wait sweep, resume, a worker that is stopping) is a
//     pending job; the ordinary claim takes it and Engine.Run sends it
//     down the same path (the path follows the step type, not how the row
//     was obtained).
//   - Retries are durable: the attempt is closed failed, the execution goes
//     back to pending and the job row to pending with available_at = now +
//     backoff; the claim of that row runs the next attempt. The job's own
//     max_attempts is 255 so no stale sweep buries it first.
//   - Crash: the lease lapses, the stale sweep (ours or PHP's) puts the row
//     back to pending, and the attempt that claims it finds the execution
//     running: it closes the interrupted attempt as expired and schedules
//     the next with retry_reason cold_replay (or fails the step when no
//     attempt is left). A completed execution is never run again: its
//     completion and the workflow's advance commit together.
//   - Time: schedule_to_close bounds the execution and is never retried;
//     start_to_close bounds an attempt; heartbeat_timeout the gap between
//     heartbeats. They are checked at attempt start, at each heartbeat and
//     at completion, and the handler's context is cancelled when one
//     passes, so a handler that honours its context ends at the deadline.
//   - Cancellation is cooperative: a heartbeat on a workflow that is no
//     longer live returns ErrActivityCancelled, and the completion of an
//     attempt whose workflow was cancelled records step_cancelled.

// localRuntime is what a worker gives the engine so that the local
// activities its own step completions reach run in its process.
type localRuntime struct {
	// Owner is the worker's reserved_by value.
	Owner string
	// Lease is how long the workflow task lease lasts after a renewal (the
	// stale timeout): recorded as lease_expires_at.
	Lease time.Duration
	// Accept reports whether the worker still takes new work; when it
	// does not (stopping), a local step is left pending for the claim.
	Accept func() bool
	// Logger receives the outcomes of local attempts.
	Logger *slog.Logger
	// Context, when set, is the context local attempts run under instead
	// of the context of the step job whose completion reached them: that
	// job is settled by then (a worker treats it as lost and cancels its
	// context), while the attempt belongs to the worker until it stops.
	Context func() context.Context
}

func (e *Engine) localLog() *slog.Logger {
	if e.local != nil && e.local.Logger != nil {
		return e.local.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (e *Engine) localLease() time.Duration {
	if e.local != nil && e.local.Lease > 0 {
		return e.local.Lease
	}
	return 300 * time.Second // durable-workflow's embedded workflow-task lease
}

// acceptsLocal reports whether a step transaction may claim a local step
// for this worker to run right after its commit.
func (a *Advance) acceptsLocal(ctx context.Context) bool {
	r := a.e.local
	return a.runLocal && r != nil && r.Owner != "" && (r.Accept == nil || r.Accept()) && ctx.Err() == nil
}

// Messages of durable-workflow's local activity runtime.
const (
	msgLocalInterrupted = "Local activity attempt was interrupted before a terminal event and will be replayed from durable history."
	msgLocalCancelled   = "Local activity cancelled: the workflow is no longer running."
)

// Retry reasons (activity_attempts.retry_reason, step_retry_scheduled).
const (
	RetryFailure    = "failure"
	RetryTimeout    = "timeout"
	RetryColdReplay = "cold_replay"
)

// localAttempt is one started attempt, run after its transaction commits.
type localAttempt struct {
	job    store.JobRow
	policy *workflow.LocalPolicy
	execID int64
	id     string
	number int
	reason string
	index  int
	start  time.Time
	state  *workflow.State // the handler's input
	trace  *jobTrace       // for step_completed / the failure events
	stepOf string          // the step's event handler name
	// wf is the workflow row as the transaction that started the attempt
	// committed it: the outcome transaction writes it fenced on that
	// instead of reading it again (completeLocalFast).
	wf store.WorkflowRow

	// deadlines of the attempt; hb moves with each heartbeat.
	mu               sync.Mutex
	sched, close, hb time.Time
	history          []byte // the execution's history as this attempt last wrote it
	beat             chan struct{}
	cancel           context.CancelCauseFunc
}

// localMarkers is the context every local activity event carries.
func localMarkers(execID int64, class string, job *store.JobRow, index int) *phpjson.Object {
	o := phpjson.NewObject().
		Set("execution_mode", phpjson.String("local")).
		Set("local_activity", phpjson.Bool(true))
	if execID != 0 {
		o.Set("activity_execution_id", phpjson.Int(execID))
	}
	return o.Set("activity_type", phpjson.String(class)).
		Set("workflow_task_id", phpjson.String(strconv.Itoa(int(job.ID)))).
		Set("sequence", phpjson.Int(int64(index)))
}

func timeValue(t time.Time) phpjson.Value {
	if t.IsZero() {
		return phpjson.Null()
	}
	return phpjson.String(msTime(t))
}

func nullTimeOf(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

// localEvent records one history event of execution x (locked):
// appendHistory, then the workflow_events row when the event has a
// Queuety counterpart.
func (a *Advance) localEvent(x *store.ActivityExecution, name string, index int, ctxObj *phpjson.Object, errVal phpjson.Value, now time.Time) error {
	if err := appendHistory(x, name, ctxObj, errVal, now); err != nil {
		return err
	}
	return a.queuetyEvent(name, index, ctxObj, errVal)
}

// appendHistory appends an entry to x.History in memory; the caller's next
// write of the execution row stores it (every write of an execution row
// carries its history).
func appendHistory(x *store.ActivityExecution, name string, ctxObj *phpjson.Object, errVal phpjson.Value, now time.Time) error {
	ctxObj.Set("activity_event", phpjson.String(name))
	if x == nil {
		return nil
	}
	var list []phpjson.Value
	if x.History.Valid {
		if v, err := phpjson.DecodeString(x.History.String); err == nil {
			list, _ = v.AsList()
		}
	}
	entry := phpjson.NewObject().
		Set("event", phpjson.String(name)).
		Set("recorded_at", timeValue(now)).
		Set("payload", phpjson.ObjectValue(ctxObj))
	if !errVal.IsNull() {
		entry.Set("exception", errVal)
	}
	b, err := phpjson.Encode(phpjson.List(append(list, phpjson.ObjectValue(entry))...))
	if err != nil {
		return err
	}
	x.History = store.String(string(b))
	return nil
}

// queuetyEvent writes the workflow_events row of a history event that has
// a Queuety counterpart (queuetyEventOf), with the markers as context.
func (a *Advance) queuetyEvent(name string, index int, ctxObj *phpjson.Object, errVal phpjson.Value) error {
	qe := queuetyEventOf(name)
	if qe == "" {
		return nil
	}
	ctxObj.Set("activity_event", phpjson.String(name))
	tr := a.e.newJobTrace(a.state, a.job)
	b := newEvent(a.wf.ID, a.job, index, tr, a.job.Handler, qe).context(phpjson.ObjectValue(ctxObj))
	if !errVal.IsNull() {
		b = b.errorValue(errVal)
	}
	ev, err := b.build()
	if err != nil {
		return err
	}
	return a.tx.InsertEvents(ev)
}

func historyBytes(x *store.ActivityExecution) []byte {
	if !x.History.Valid {
		return []byte("[]")
	}
	return []byte(x.History.String)
}

func errorObject(message, class string) phpjson.Value {
	return phpjson.ObjectValue(phpjson.NewObject().
		Set("message", phpjson.String(message)).
		Set("class", phpjson.String(class)).
		Set("trace", phpjson.String("")))
}

// enqueueLocal is enqueue for a local activity step in a worker's step
// transaction: the job is inserted claimed by this worker and attempt 1
// starts in the same transaction; the attempt runs after the commit.
func (a *Advance) enqueueLocal(ctx context.Context, step workflow.Step, index int) error {
	jobs, err := workflow.StepJobs(step, index, a.state.DispatchDefaults(), nil)
	if err != nil {
		return err
	}
	sj := storeJobs(jobs)[0]
	id, err := a.tx.InsertClaimedStepJob(a.wf.ID, sj, a.e.local.Owner)
	if err != nil {
		return err
	}
	prev := a.job
	a.job = &store.JobRow{
		ID: id, Queue: sj.Queue, Handler: sj.Handler, Payload: string(sj.Payload), Priority: sj.Priority,
		Status: store.StatusProcessing, Attempts: 1, MaxAttempts: sj.MaxAttempts,
		WorkflowID: store.Int(a.wf.ID), StepIndex: store.Int(int64(index)), CostUnits: int64(sj.CostUnits),
		ReservedBy: store.String(a.e.local.Owner),
	}
	defer func() { a.job = prev }()
	// The attempt starts on the state this transaction writes.
	saved := a.current
	a.current = index
	defer func() { a.current = saved }()
	att, err := a.startLocal(ctx, step, index, true, nil)
	if err != nil {
		return err
	}
	if att != nil {
		// The row as this transaction leaves it: the state it wrote (the
		// fence compares it byte for byte), on this step.
		att.wf = *a.wf
		if a.written != nil {
			att.wf.State = string(a.written)
		}
		att.wf.CurrentStep = index
	}
	a.localNext = att
	return nil
}

// startLocal runs the start of spec §3.5 for the locked local step job
// a.job (workflow locked, state loaded) and its execution x (locked; nil
// when none exists yet): create the execution with its first attempt,
// replay a terminal one, take the timeout path when a deadline has passed
// (an interrupted attempt included), close an interrupted attempt within
// its deadlines (cold replay), or start the next attempt. fresh: the job's
// lease was just taken (inserted claimed, or claimed a moment ago) and is
// not renewed. It returns the started attempt, or nil when the transaction
// settled the step.
func (a *Advance) startLocal(ctx context.Context, step workflow.Step, index int, fresh bool, x *store.ActivityExecution) (*localAttempt, error) {
	e, job := a.e, a.job
	now := e.store.PreciseNow()
	pol, perr := workflow.ParseLocalPolicy(step, a.metadata())
	if perr != nil {
		// A definition the builder would have refused (PHP, hand-written):
		// the step fails for good with the reason.
		return nil, a.localInvalid(index, perr)
	}
	lc := &localTx{a: a, pol: pol, x: x, index: index, now: now}
	if x == nil {
		return lc.startNew(step, fresh)
	}
	switch x.Status {
	case store.ActivityCompleted:
		// Committed history is the authority: resume with the recorded
		// result, never run the class again.
		out := phpjson.NewObject()
		if v, err := phpjson.DecodeString(x.Result.String); err == nil && phpjson.IsArray(v) {
			out = phpjson.AsArray(v)
		}
		a.trace = lc.trace(step, "", int(x.AttemptCount))
		return nil, a.finalize(ctx, out, true)
	case store.ActivityFailed, store.ActivityCancelled:
		msg := x.LastError.String
		if err := a.tx.BuryJob(job.ID, msg); err != nil {
			return nil, err
		}
		if x.Status == store.ActivityFailed {
			return nil, a.failLocked(job.ID, msg)
		}
		return nil, nil
	}
	// Spec §3.5 step 3 before step 4: an attempt interrupted past one of
	// its deadlines (a crash, then the stale sweep minutes later) timed
	// out; it is not replayed as if nothing had expired. The kinds go in
	// the spec's order (schedule_to_close, heartbeat, start_to_close). A
	// pending execution has its attempt deadlines cleared (§3.6), so only
	// schedule_to_close can fire for it.
	if kind, at := passedDeadline(x, now); kind != "" {
		attemptID := ""
		if x.Status == store.ActivityRunning && x.CurrentAttemptID.Valid {
			// Closed like any timed-out attempt (§3.7): failed, with the
			// timeout message and kind, whatever the path that follows.
			attemptID = x.CurrentAttemptID.String
			msg := timeoutMessage(pol.Class, kind, at, nullTimeOf(x.LastHeartbeatAt))
			if _, err := a.tx.CloseActivityAttempt(attemptID, store.AttemptFailed, msg, workflow.ActivityTimeoutClass, kind, now); err != nil {
				return nil, err
			}
		}
		return nil, lc.timedOut(kind, attemptID, at, x.AttemptCount)
	}
	if x.Status == store.ActivityRunning {
		// Cold replay: the attempt that was running has no terminal record.
		if x.CurrentAttemptID.Valid {
			if _, err := a.tx.CloseActivityAttempt(x.CurrentAttemptID.String, store.AttemptExpired, msgLocalInterrupted, "", "", now); err != nil {
				return nil, err
			}
		}
		if int64(x.AttemptCount) >= pol.MaxAttempts {
			return nil, lc.failed(workflow.ActivityFailed, msgLocalInterrupted, "", "", false, x.AttemptCount, false)
		}
		return nil, lc.retry(RetryColdReplay, msgLocalInterrupted, "", "", x.CurrentAttemptID.String, x.AttemptCount, false)
	}
	return lc.start(step, fresh)
}

// newAttempt builds attempt number of a.job with its deadlines.
func (lc *localTx) newAttempt(step workflow.Step, number int, reason string, sched time.Time) *localAttempt {
	a, pol, now := lc.a, lc.pol, lc.now
	att := &localAttempt{
		job: *a.job, policy: pol, id: ulid.Make().String(), number: number,
		reason: reason, index: lc.index, start: now,
		state: workflow.NewState(phpjson.CloneObject(a.state.Object())), stepOf: step.EventHandler(),
		sched: sched, beat: make(chan struct{}, 1),
	}
	if pol.StartToClose > 0 {
		att.close = now.Add(time.Duration(pol.StartToClose) * time.Second).Truncate(time.Millisecond)
	}
	if pol.Heartbeat > 0 {
		att.hb = now.Add(time.Duration(pol.Heartbeat) * time.Second).Truncate(time.Millisecond)
	}
	return att
}

// startedContext is the workflow.ActivityStarted payload.
func (lc *localTx) startedContext(att *localAttempt, lease time.Time) *phpjson.Object {
	c := lc.markers().
		Set("activity_attempt_id", phpjson.String(att.id)).
		Set("attempt_number", phpjson.Int(int64(att.number))).
		Set("lease_expires_at", timeValue(lease)).
		Set("close_deadline_at", timeValue(att.close)).
		Set("heartbeat_deadline_at", timeValue(att.hb))
	if att.reason != "" {
		c.Set("retry_reason", phpjson.String(att.reason))
	}
	return c
}

// startNew creates the execution already running its first attempt (the
// first encounter: workflow.ActivityScheduled and workflow.ActivityStarted at once).
func (lc *localTx) startNew(step workflow.Step, fresh bool) (*localAttempt, error) {
	a, pol, now := lc.a, lc.pol, lc.now
	snap, err := phpjson.Encode(phpjson.ObjectValue(pol.Snapshot))
	if err != nil {
		return nil, err
	}
	policy, err := phpjson.Encode(phpjson.ObjectValue(retryPolicy(pol)))
	if err != nil {
		return nil, err
	}
	var sched time.Time
	if pol.ScheduleToClose > 0 {
		sched = now.Add(time.Duration(pol.ScheduleToClose) * time.Second).Truncate(time.Millisecond)
	}
	x := &store.ActivityExecution{WorkflowID: a.wf.ID, StepIndex: lc.index, JobID: a.job.ID,
		ActivityType: pol.Class, ExecutionMode: "local", QueueBypassed: true, Status: store.ActivityRunning, AttemptCount: 1}
	lc.x = x
	att := lc.newAttempt(step, 1, "", sched)
	owner := a.job.ReservedBy.String
	lease := now.Add(a.e.localLease())
	if !fresh {
		if _, err := a.tx.RenewJobLease(a.job.ID, owner, a.job.Attempts, nil); err != nil {
			return nil, err
		}
	}
	// History entries are written before the row exists: they carry no
	// activity_execution_id (it is the row's own id).
	scheduled := lc.markers().
		Set("activity", phpjson.ObjectValue(phpjson.CloneObject(pol.Snapshot).Set("local_activity", phpjson.Bool(true)))).
		Set("schedule_to_close_deadline_at", timeValue(sched))
	if err := appendHistory(x, workflow.ActivityScheduled, scheduled, phpjson.Null(), now); err != nil {
		return nil, err
	}
	started := lc.startedContext(att, lease)
	if err := appendHistory(x, workflow.ActivityStarted, started, phpjson.Null(), now); err != nil {
		return nil, err
	}
	id, err := a.tx.InsertRunningActivityExecution(store.NewRunningExecution{
		NewActivityExecution: store.NewActivityExecution{
			WorkflowID: a.wf.ID, StepIndex: lc.index, JobID: a.job.ID, ActivityType: pol.Class,
			Options: snap, RetryPolicy: policy, ScheduleToCloseDeadline: sched, History: historyBytes(x), Now: now,
		},
		AttemptID: att.id, CloseDeadline: att.close, HeartbeatDeadline: att.hb,
	})
	if err != nil {
		return nil, err
	}
	x.ID, att.execID, att.history = id, id, historyBytes(x)
	if err := a.tx.InsertActivityAttempt(store.StartAttempt{
		ExecutionID: id, WorkflowID: a.wf.ID, JobID: a.job.ID, AttemptID: att.id, AttemptNumber: 1,
		LeaseOwner: owner, LeaseExpires: lease, Now: now,
	}); err != nil {
		return nil, err
	}
	l := jobLog(a.job, a.wf.ID, lc.index, store.EventStarted)
	l.Attempt = store.Int(int64(a.job.Attempts))
	if err := a.tx.InsertLogs(l); err != nil {
		return nil, err
	}
	if err := a.queuetyEvent(workflow.ActivityStarted, lc.index, lc.startedContext(att, lease), phpjson.Null()); err != nil {
		return nil, err
	}
	att.trace = lc.trace(step, att.id, att.number)
	return att, nil
}

// localInvalid fails a step whose definition cannot run as a local
// activity (routing options, values out of range).
func (a *Advance) localInvalid(index int, cause error) error {
	msg := cause.Error()
	ev := phpjson.NewObject().Set("execution_mode", phpjson.String("local")).Set("local_activity", phpjson.Bool(true)).
		Set("workflow_task_id", phpjson.String(strconv.Itoa(int(a.job.ID))))
	if err := a.localEvent(nil, workflow.ActivityFailed, index, ev, errorObject(msg, workflow.InvalidArgumentException), a.e.store.PreciseNow()); err != nil {
		return err
	}
	l := jobLog(a.job, a.wf.ID, index, store.EventBuried)
	l.Attempt = store.Int(int64(a.job.Attempts))
	l.ErrorMessage, l.ErrorClass = store.String(msg), store.String(workflow.InvalidArgumentException)
	if err := a.tx.InsertLogs(l); err != nil {
		return err
	}
	if err := a.tx.BuryJob(a.job.ID, msg); err != nil {
		return err
	}
	return a.failLocked(a.job.ID, msg)
}

// localTx is one local activity transaction on a locked job and execution.
type localTx struct {
	a     *Advance
	pol   *workflow.LocalPolicy
	x     *store.ActivityExecution
	index int
	now   time.Time
}

func (lc *localTx) markers() *phpjson.Object {
	return localMarkers(lc.x.ID, lc.pol.Class, lc.a.job, lc.index)
}

// trace is the job trace whose step_completed context carries the markers.
func (lc *localTx) trace(step workflow.Step, attemptID string, number int) *jobTrace {
	tr := lc.a.e.newJobTrace(lc.a.state, lc.a.job)
	c := lc.markers().Set("attempt_number", phpjson.Int(int64(number))).
		Set("activity_event", phpjson.String(workflow.ActivityCompleted))
	if attemptID != "" {
		c.Set("activity_attempt_id", phpjson.String(attemptID))
	}
	tr.bufContext = phpjson.ObjectValue(c)
	return tr
}

// start begins the next attempt of a pending execution (spec §3.5 step 5).
func (lc *localTx) start(step workflow.Step, fresh bool) (*localAttempt, error) {
	a, x, now := lc.a, lc.x, lc.now
	owner := a.job.ReservedBy.String
	reason := x.RetryReason.String
	if x.AttemptCount == 0 {
		reason = ""
	}
	att := lc.newAttempt(step, x.AttemptCount+1, reason, nullTimeOf(x.ScheduleToCloseDeadlineAt))
	att.execID = x.ID
	lease := now.Add(a.e.localLease())
	if !fresh {
		// Renew the workflow task lease before the attempt starts (the
		// caller checked under the row lock that the claim holds it).
		if _, err := a.tx.RenewJobLease(a.job.ID, owner, a.job.Attempts, nil); err != nil {
			return nil, err
		}
	}
	started := jobLog(a.job, a.wf.ID, lc.index, store.EventStarted)
	started.Attempt = store.Int(int64(a.job.Attempts))
	if err := a.tx.InsertLogs(started); err != nil {
		return nil, err
	}
	if err := a.localEvent(x, workflow.ActivityStarted, lc.index, lc.startedContext(att, lease), phpjson.Null(), now); err != nil {
		return nil, err
	}
	if err := a.tx.StartActivityAttempt(store.StartAttempt{
		ExecutionID: x.ID, WorkflowID: a.wf.ID, JobID: a.job.ID, AttemptID: att.id, AttemptNumber: att.number,
		LeaseOwner: owner, RetryReason: att.reason, CloseDeadline: att.close, HeartbeatDeadline: att.hb,
		LeaseExpires: lease, History: historyBytes(x), Now: now,
	}); err != nil {
		return nil, err
	}
	att.history = historyBytes(x)
	att.trace = lc.trace(step, att.id, att.number)
	return att, nil
}

// retry schedules the next attempt durably (spec §3.6): the execution
// pending, the job pending after the backoff, step_retry_scheduled.
// The caller closed the attempt. logs adds Queuety's `failed, retried`.
func (lc *localTx) retry(reason, message, class, timeoutKind, afterID string, afterNumber int, logs bool) error {
	a, pol := lc.a, lc.pol
	delay := backoffAfter(pol, afterNumber)
	if err := a.tx.RetryJob(a.job.ID, time.Duration(delay)*time.Second); err != nil {
		return err
	}
	if logs {
		failed := jobLog(a.job, a.wf.ID, lc.index, store.EventFailed)
		failed.Attempt = store.Int(int64(a.job.Attempts))
		failed.ErrorMessage, failed.ErrorClass = store.String(message), store.String(class)
		retried := jobLog(a.job, a.wf.ID, lc.index, store.EventRetried)
		retried.Attempt = failed.Attempt
		if err := a.tx.InsertLogs(failed, retried); err != nil {
			return err
		}
	}
	c := lc.markers().
		Set("retry_reason", phpjson.String(reason)).
		Set("retry_task_id", phpjson.String(strconv.Itoa(int(a.job.ID)))).
		Set("retry_of_task_id", phpjson.String(strconv.Itoa(int(a.job.ID)))).
		Set("retry_available_at", timeValue(lc.now.Add(time.Duration(delay)*time.Second))).
		Set("retry_backoff_seconds", phpjson.Int(delay)).
		Set("retry_after_attempt_id", phpjson.NullIfEmpty(afterID)).
		Set("retry_after_attempt", phpjson.Int(int64(afterNumber))).
		Set("max_attempts", phpjson.Int(pol.MaxAttempts)).
		Set("retry_policy", phpjson.ObjectValue(retryPolicy(pol))).
		Set("timeout_kind", phpjson.NullIfEmpty(timeoutKind)).
		Set("exception_class", phpjson.NullIfEmpty(class)).
		Set("message", phpjson.String(message))
	errVal := phpjson.Null()
	if message != "" {
		errVal = errorObject(message, class)
	}
	if err := a.localEvent(lc.x, workflow.ActivityRetryScheduled, lc.index, c, errVal, lc.now); err != nil {
		return err
	}
	return a.tx.RetryActivityExecution(lc.x.ID, message, class, reason, timeoutKind, historyBytes(lc.x), lc.now)
}

// failed records a terminal failure (spec §3.5): the execution failed (or
// cancelled), step_failed / step_timed_out / step_cancelled, the job
// buried (`buried` log) and, unless cancelled, the workflow failed.
func (lc *localTx) failed(event, message, class, timeoutKind string, nonRetryable bool, attempts int, cancelled bool) error {
	a := lc.a
	status := store.ActivityFailed
	if cancelled {
		status = store.ActivityCancelled
	}
	c := lc.markers().Set("attempt_number", phpjson.Int(int64(attempts)))
	switch event {
	case workflow.ActivityCancelled:
		c.Set("cancelled_at", timeValue(lc.now))
	case workflow.ActivityTimedOut:
		c.Set("failure_category", phpjson.String("timeout")).Set("timeout_kind", phpjson.String(timeoutKind)).
			Set("schedule_to_close_deadline_at", timeValue(nullTimeOf(lc.x.ScheduleToCloseDeadlineAt)))
	default:
		c.Set("failure_category", phpjson.String("activity")).Set("non_retryable", phpjson.Bool(nonRetryable)).
			Set("exception_class", phpjson.NullIfEmpty(class))
	}
	if err := a.localEvent(lc.x, event, lc.index, c, errorObject(message, class), lc.now); err != nil {
		return err
	}
	if err := a.tx.CloseActivityExecution(lc.x.ID, status, message, class, timeoutKind, historyBytes(lc.x), lc.now); err != nil {
		return err
	}
	if !workflow.IsCompletable(a.job.Status) {
		return nil
	}
	buried := jobLog(a.job, a.wf.ID, lc.index, store.EventBuried)
	buried.Attempt = store.Int(int64(a.job.Attempts))
	buried.ErrorMessage, buried.ErrorClass = store.String(message), optNullString(class)
	if err := a.tx.InsertLogs(buried); err != nil {
		return err
	}
	if err := a.tx.BuryJob(a.job.ID, message); err != nil {
		return err
	}
	if cancelled || !workflow.IsLive(a.wf.Status) {
		return nil
	}
	return a.failLocked(a.job.ID, message)
}

func optNullString(s string) sql.NullString {
	if s == "" {
		return sql.NullString{}
	}
	return store.String(s)
}

// timedOut takes the timeout path: schedule_to_close, or no attempt left,
// fails for good (step_timed_out); otherwise a retry with reason timeout.
func (lc *localTx) timedOut(kind, attemptID string, deadline time.Time, attempts int) error {
	msg := timeoutMessage(lc.pol.Class, kind, deadline, nullTimeOf(lc.x.LastHeartbeatAt))
	if kind == workflow.TimeoutScheduleToClose || int64(attempts) >= lc.pol.MaxAttempts {
		return lc.failed(workflow.ActivityTimedOut, msg, workflow.ActivityTimeoutClass, kind, false, attempts, false)
	}
	return lc.retry(RetryTimeout, msg, workflow.ActivityTimeoutClass, kind, attemptID, attempts, true)
}

func timeoutMessage(class, kind string, deadline, lastBeat time.Time) string {
	ts := msTime(deadline)
	switch kind {
	case workflow.TimeoutScheduleToClose:
		return fmt.Sprintf("Local activity %s schedule-to-close deadline expired at %s.", class, ts)
	case workflow.TimeoutHeartbeat:
		last := "never"
		if !lastBeat.IsZero() {
			last = msTime(lastBeat)
		}
		return fmt.Sprintf("Local activity %s heartbeat deadline expired at %s (last heartbeat: %s).", class, ts, last)
	}
	return fmt.Sprintf("Local activity %s start-to-close deadline expired at %s.", class, ts)
}

// passedDeadline is the first deadline of the execution that now has
// reached, in the spec's order.
func passedDeadline(x *store.ActivityExecution, now time.Time) (string, time.Time) {
	for _, d := range []struct {
		kind string
		at   time.Time
	}{
		{workflow.TimeoutScheduleToClose, nullTimeOf(x.ScheduleToCloseDeadlineAt)},
		{workflow.TimeoutHeartbeat, nullTimeOf(x.HeartbeatDeadlineAt)},
		{workflow.TimeoutStartToClose, nullTimeOf(x.CloseDeadlineAt)},
	} {
		if !d.at.IsZero() && !now.Before(d.at) {
			return d.kind, d.at
		}
	}
	return "", time.Time{}
}

// runLocalClaimed runs a local activity job that came through the claim
// (first step, retry, rescued row): the start transaction, then the
// attempt and whatever local steps follow it.
func (e *Engine) runLocalClaimed(ctx context.Context, job *store.JobRow) error {
	var att *localAttempt
	// Pipelined too: its writes go in the packet of the execution's
	// insert and the commit's.
	a, err := e.pipelinedStepTx(ctx, &jobTrace{}, 0, func(a *Advance) error {
		att = nil
		x, err := a.lockLocal(job.WorkflowID.Int64, job.ID)
		if err != nil {
			return err
		}
		if !workflow.IsLive(a.wf.Status) {
			if workflow.IsCompletable(a.job.Status) {
				return a.tx.BuryJob(a.job.ID, msgAdvancedBefore)
			}
			return nil
		}
		// The claim's row in memory may predate the claim's write of
		// reserved_by; its attempts are the claim's.
		if a.job.Status != store.StatusProcessing || a.job.Attempts != job.Attempts || !a.job.ReservedBy.Valid {
			return nil // not ours any more (rescued, settled)
		}
		if err := a.loadState(); err != nil {
			return err
		}
		if a.job.StepIndex.Valid && int(a.job.StepIndex.Int64) != a.current {
			return a.tx.BuryJob(a.job.ID, msgAdvancedBefore)
		}
		// The state read under the lock may differ from the one that
		// routed the job here (engine_run.go): its step must still be one
		// whose kind runs its own jobs (OwnJobs, the local activity's).
		step, ok := a.step(a.current)
		if ok {
			_, ok = e.Kind(step.Type()).(OwnJobs)
		}
		if !ok {
			return runtimeErrorf("Job %d is not the job of a local activity step.", job.ID)
		}
		a.runLocal = true
		att, err = a.startLocal(ctx, step, a.current, justClaimed(a.job, e.store.PreciseNow()), x)
		if att != nil {
			att.wf = *a.wf // read under the lock; starting an attempt does not write it
		}
		return err
	})
	if err != nil {
		return err
	}
	next := a.localNext
	if aerr := e.afterCommit(ctx, a); aerr != nil {
		e.localLog().Warn("local activity: after-commit work failed", "job", job.ID, "err", aerr)
	}
	if att == nil {
		att = next
	}
	e.runLocalChain(ctx, att)
	return nil
}

// justClaimed reports whether the claim of job took its lease a moment
// ago: renewing it before the attempt starts would write reserved_at
// again with (nearly) the same second, a statement for nothing.
func justClaimed(job *store.JobRow, now time.Time) bool {
	if !job.ReservedAt.Valid {
		return false
	}
	d := now.Sub(job.ReservedAt.Time)
	return d > -2*time.Second && d < 2*time.Second
}

// runLocalChain runs started attempts one after the other: each outcome
// transaction may start the next local step for this worker.
func (e *Engine) runLocalChain(ctx context.Context, att *localAttempt) {
	if att != nil && e.local != nil && e.local.Context != nil {
		if c := e.local.Context(); c != nil {
			ctx = c
		}
	}
	for att != nil {
		next, err := e.runLocalAttempt(ctx, att)
		if err != nil {
			// The attempt stays running in the tables; the lease lapses and
			// the cold replay after the stale sweep deals with it.
			e.localLog().Error("local activity: recording the outcome failed; the stale sweep will replay it",
				"job", att.job.ID, "execution", att.execID, "attempt", att.number, "err", err)
			return
		}
		att = next
	}
}

type localScopeKey struct{}

// localScope is what ActivityHeartbeat finds in the handler's context.
type localScope struct {
	e   *Engine
	att *localAttempt
}

// runLocalAttempt runs the class in process and commits the outcome.
func (e *Engine) runLocalAttempt(ctx context.Context, att *localAttempt) (*localAttempt, error) {
	hctx, cancel := context.WithCancelCause(ctx)
	att.cancel = cancel
	defer cancel(nil)
	stop := e.watchDeadlines(hctx, att)
	hctx = context.WithValue(hctx, localScopeKey{}, &localScope{e: e, att: att})
	out, callErr := e.callHandler(hctx, &att.job, att.state, att.index)
	stop()
	cause := context.Cause(hctx)
	var te *workflow.ActivityTimeoutError
	if callErr != nil && hctx.Err() != nil && errors.As(cause, &te) {
		callErr = te // the handler ended because a deadline passed
	}
	interrupted := callErr != nil && ctx.Err() != nil && te == nil
	dur := time.Since(att.start)
	// The outcome is recorded even when the worker is stopping.
	wctx := context.WithoutCancel(ctx)
	next, err := e.finishLocal(wctx, att, out, callErr, interrupted, dur)
	var rt *workflow.RuntimeError
	if callErr == nil && (errors.As(err, &rt) || workflow.IsConstraintViolation(err)) {
		// The workflow could not take the output (an unknown _next_step, a
		// budget exceeded): that is the step's failure, as for any step.
		return e.finishLocal(wctx, att, nil, err, false, dur)
	}
	return next, err
}

// watchDeadlines cancels the handler's context when the attempt's first
// deadline passes (heartbeats move the heartbeat deadline).
func (e *Engine) watchDeadlines(ctx context.Context, att *localAttempt) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			att.mu.Lock()
			kind, at := "", time.Time{}
			for _, d := range []struct {
				kind string
				at   time.Time
			}{{workflow.TimeoutScheduleToClose, att.sched}, {workflow.TimeoutHeartbeat, att.hb}, {workflow.TimeoutStartToClose, att.close}} {
				if !d.at.IsZero() && (at.IsZero() || d.at.Before(at)) {
					kind, at = d.kind, d.at
				}
			}
			att.mu.Unlock()
			if kind == "" {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-att.beat:
					continue
				}
			}
			t := time.NewTimer(time.Until(at))
			select {
			case <-done:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			case <-att.beat:
				t.Stop()
				continue
			case <-t.C:
				att.cancel(&workflow.ActivityTimeoutError{Kind: kind, Message: timeoutMessage(att.policy.Class, kind, at, time.Time{})})
				return
			}
		}
	}()
	return func() { close(done) }
}

// finishLocal is the outcome transaction of an attempt (spec §3.5 step 6).
func (e *Engine) finishLocal(ctx context.Context, att *localAttempt, out *phpjson.Object, callErr error, interrupted bool, dur time.Duration) (*localAttempt, error) {
	var stale bool
	fast := true
	body := func(a *Advance) error {
		stale = false
		a.runLocal = true
		if fast {
			if done, err := a.completeLocalFast(ctx, att, out, callErr, interrupted); done || err != nil {
				return err
			}
		}
		x, err := a.lockLocal(att.job.WorkflowID.Int64, att.job.ID)
		if err != nil {
			return err
		}
		if x == nil || x.Status != store.ActivityRunning || x.CurrentAttemptID.String != att.id {
			stale = true // rescued and replayed meanwhile: this outcome is discarded
			return nil
		}
		if err := a.loadState(); err != nil {
			return err
		}
		now := e.store.PreciseNow()
		lc := &localTx{a: a, pol: att.policy, x: x, index: att.index, now: now}
		// Cancelled (Workflow::cancel buried the job) or moved on while the
		// attempt ran: observed now, as the cooperative cancellation.
		cancelled := !workflow.IsLive(a.wf.Status) || (a.job.StepIndex.Valid && int(a.job.StepIndex.Int64) != a.current)
		if !cancelled && (a.job.Status != store.StatusProcessing || a.job.ReservedBy != att.job.ReservedBy || a.job.Attempts != att.job.Attempts) {
			stale = true
			return nil
		}
		if cancelled {
			if _, err := a.tx.CloseActivityAttempt(att.id, store.AttemptCancelled, msgLocalCancelled, "", "", now); err != nil {
				return err
			}
			return lc.failed(workflow.ActivityCancelled, msgLocalCancelled, "", "", false, att.number, true)
		}
		kind, at := passedDeadline(x, now)
		var te *workflow.ActivityTimeoutError
		if errors.As(callErr, &te) && kind == "" {
			kind, at = te.Kind, now
		}
		switch {
		case kind != "":
			// A late success counts as a timeout, and so does an attempt
			// interrupted after a deadline passed (spec §3.5: the timeout
			// path comes before the replay).
			msg := timeoutMessage(att.policy.Class, kind, at, nullTimeOf(x.LastHeartbeatAt))
			if _, err := a.tx.CloseActivityAttempt(att.id, store.AttemptFailed, msg, workflow.ActivityTimeoutClass, kind, now); err != nil {
				return err
			}
			return lc.timedOut(kind, att.id, at, att.number)
		case interrupted:
			if _, err := a.tx.CloseActivityAttempt(att.id, store.AttemptExpired, msgLocalInterrupted, "", "", now); err != nil {
				return err
			}
			if int64(att.number) >= att.policy.MaxAttempts {
				return lc.failed(workflow.ActivityFailed, msgLocalInterrupted, "", "", false, att.number, false)
			}
			return lc.retry(RetryColdReplay, msgLocalInterrupted, "", "", att.id, att.number, false)
		case callErr == nil:
			res, err := encodeObject(orEmpty(out))
			if err != nil {
				return err
			}
			c := lc.markers().
				Set("activity_attempt_id", phpjson.String(att.id)).
				Set("attempt_number", phpjson.Int(int64(att.number))).
				Set("result", phpjson.ObjectValue(orEmpty(out)))
			if err := appendHistory(x, workflow.ActivityCompleted, c, phpjson.Null(), now); err != nil {
				return err
			}
			if _, err := a.tx.CompleteActivity(x.ID, res, historyBytes(x), now); err != nil {
				return err
			}
			t := *att.trace
			a.trace = &t
			return a.finalize(ctx, orEmpty(out), true)
		}
		msg, class := callErr.Error(), throwable.Class(callErr)
		if _, err := a.tx.CloseActivityAttempt(att.id, store.AttemptFailed, msg, class, "", now); err != nil {
			return err
		}
		nonRetryable := errors.As(callErr, new(*workflow.NonRetryableError)) || workflow.IsConstraintViolation(callErr) || nonRetryable(att.policy, class)
		if nonRetryable || int64(att.number) >= att.policy.MaxAttempts {
			return lc.failed(workflow.ActivityFailed, msg, class, "", nonRetryable, att.number, false)
		}
		return lc.retry(RetryFailure, msg, class, "", att.id, att.number, true)
	}
	// The hot path's statements need no answer but their ids and row
	// counts: pipelined, they take three round trips instead of nine.
	a, err := e.pipelinedStepTx(ctx, &jobTrace{}, dur, body)
	// A fence checked at the commit (a last step's: nothing after it
	// needed an answer) fails outside the body, unwrapped.
	if errors.Is(err, errLocalFastMissed) || errors.Is(err, store.ErrAssumptionFailed) {
		// Someone wrote the workflow or the claim since the attempt
		// started (a signal, a pause, a rescue), or the step failed:
		// decide on the rows as they are now.
		fast = false
		a, err = e.stepTx(ctx, &jobTrace{}, dur, body)
	}
	if err != nil {
		return nil, err
	}
	log := e.localLog()
	switch {
	case stale:
		log.Warn("local activity outcome discarded: the attempt no longer holds its workflow task", "job", att.job.ID, "attempt", att.number)
	case callErr != nil:
		log.Info("local activity attempt failed", "job", att.job.ID, "class", att.policy.Class, "attempt", att.number, "err", callErr)
	}
	next := a.localNext
	if aerr := e.afterCommit(ctx, a); aerr != nil {
		log.Warn("local activity: after-commit work failed", "job", att.job.ID, "err", aerr)
	}
	return next, nil
}

// lockLocal locks the workflow, then the step job with its execution (one
// round trip), as the local activity transactions start.
func (a *Advance) lockLocal(workflowID, jobID int64) (*store.ActivityExecution, error) {
	var err error
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil {
		return nil, err
	}
	if a.wf == nil {
		return nil, runtimeErrorf("Workflow %d not found.", workflowID)
	}
	var x *store.ActivityExecution
	if a.job, x, err = a.tx.LockJobWithExecution(jobID); err != nil {
		return nil, err
	}
	if a.job == nil {
		return nil, runtimeErrorf("Job %d not found.", jobID)
	}
	return x, nil
}

// completeLocalFast is the outcome transaction's hot path: an attempt that
// succeeded within its deadlines on a live workflow advances the workflow
// without reading a row (store.AssumeWorkflow): the workflow's next state
// is written fenced on the row the attempt's start committed, and its job,
// execution and attempt complete in one statement fenced on the claim
// (store.CompleteJobAsLocalStep), then the step's log and event rows, and
// the next local step's, one INSERT per table. It is the statements of a
// chained step (chain.go) minus its two locking reads plus the execution
// and attempt rows the contract adds. done is false when anything known
// in memory is off (failure, deadline, cancellation): the caller then takes
// the general path in the same transaction, on which nothing was changed.
// A fence that fails, or any failure after the fences were set, fails the
// transaction with errLocalFastMissed: it is run again on the general path.
func (a *Advance) completeLocalFast(ctx context.Context, att *localAttempt, out *phpjson.Object, callErr error, interrupted bool) (done bool, err error) {
	if callErr != nil || interrupted || att.wf.ID == 0 {
		return false, nil
	}
	wf := att.wf
	if !workflow.IsLive(wf.Status) || int(att.job.StepIndex.Int64) != wf.CurrentStep {
		return false, nil
	}
	now := a.e.store.PreciseNow()
	att.mu.Lock()
	hb := att.hb
	att.mu.Unlock()
	for _, d := range []time.Time{att.sched, hb, att.close} {
		if !d.IsZero() && !now.Before(d) {
			return false, nil
		}
	}
	a.wf = &wf
	if err := a.loadState(); err != nil {
		return false, nil // read again under the lock, where it is reported
	}
	res, err := encodeObject(orEmpty(out))
	if err != nil {
		return false, err
	}
	att.mu.Lock()
	x := &store.ActivityExecution{ID: att.execID, History: store.String(string(att.history))}
	att.mu.Unlock()
	job := att.job
	a.job = &job
	lc := &localTx{a: a, pol: att.policy, x: x, index: att.index, now: now}
	c := lc.markers().
		Set("activity_attempt_id", phpjson.String(att.id)).
		Set("attempt_number", phpjson.Int(int64(att.number))).
		Set("result", phpjson.ObjectValue(orEmpty(out)))
	if err := appendHistory(x, workflow.ActivityCompleted, c, phpjson.Null(), now); err != nil {
		return false, err
	}
	a.tx.AssumeWorkflow(&wf)
	a.tx.CompleteJobAsLocalStep(store.LocalStepDone{
		JobID: job.ID, Owner: job.ReservedBy.String, Attempts: job.Attempts,
		ExecutionID: att.execID, AttemptID: att.id, Result: res, History: historyBytes(x), Now: now,
	})
	t := *att.trace
	a.trace = &t
	if err := a.finalize(ctx, orEmpty(out), true); err != nil {
		// Failed fence, or a failure decided on a state that may be stale
		// (an unknown _next_step, a budget): either way the ordinary path
		// decides again on the rows as they are.
		return false, fmt.Errorf("%w: %w", errLocalFastMissed, err)
	}
	return true, nil
}

// errLocalFastMissed: completeLocalFast's transaction must be run again on
// the general path.
var errLocalFastMissed = errors.New("local step completion: assumed rows must be read")

// backoffAfter is the delay in seconds before the attempt after attempt n
// (1-based): backoff[min(n-1, len-1)], 0 for an empty list.
func backoffAfter(p *workflow.LocalPolicy, n int) int64 {
	if len(p.Backoff) == 0 {
		return 0
	}
	return p.Backoff[min(max(n-1, 0), len(p.Backoff)-1)]
}

// retryPolicy is the standard retry-policy snapshot (spec §3.2).
func retryPolicy(p *workflow.LocalPolicy) *phpjson.Object {
	vals := make([]phpjson.Value, len(p.Backoff))
	for i, b := range p.Backoff {
		vals[i] = phpjson.Int(b)
	}
	pos := func(n int64) phpjson.Value {
		if n <= 0 {
			return phpjson.Null()
		}
		return phpjson.Int(n)
	}
	types := make([]phpjson.Value, len(p.NonRetryable))
	for i, t := range p.NonRetryable {
		types[i] = phpjson.String(t)
	}
	return phpjson.NewObject().
		Set("snapshot_version", phpjson.Int(1)).
		Set("max_attempts", phpjson.Int(p.MaxAttempts)).
		Set("backoff_seconds", phpjson.List(vals...)).
		Set("start_to_close_timeout", pos(p.StartToClose)).
		Set("schedule_to_start_timeout", phpjson.Null()).
		Set("schedule_to_close_timeout", pos(p.ScheduleToClose)).
		Set("heartbeat_timeout", pos(p.Heartbeat)).
		Set("non_retryable_error_types", phpjson.List(types...))
}

// nonRetryable reports whether an error class is listed (PHP class names
// compare without a leading backslash; a short name matches the last
// segment of a namespaced class).
func nonRetryable(p *workflow.LocalPolicy, class string) bool {
	c := strings.TrimPrefix(class, `\`)
	short := c[strings.LastIndex(c, `\`)+1:]
	for _, t := range p.NonRetryable {
		t = strings.TrimPrefix(t, `\`)
		if t == c || t == short {
			return true
		}
	}
	return false
}
