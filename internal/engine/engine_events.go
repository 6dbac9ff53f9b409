package engine

import (
	"strconv"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// jobTrace is what PHP's worker computes before it runs a workflow job
// (Worker::workflow_step_trace_info) together with the ExecutionContext
// trace buffer the engine consumes: the first event written after the
// handler ran takes the buffered input and context, later ones fall back
// to their own values (that is why a for_each step settled by a branch
// writes its step_completed input as the public state, spec §9).
type jobTrace struct {
	stepName, stepType string
	input              phpjson.Value   // step_started input
	public             *phpjson.Object // public state when the job started
	context            phpjson.Value   // step_started context: [] or {item, item_index}

	consumed   bool
	bufContext phpjson.Value // null when the worker added none

	// The `started` log and step_started event, written by the job's
	// first transaction (the step's settlement, or its failure) so a step
	// costs one commit; nil once written.
	startLog   *store.LogRow
	startEvent *store.WorkflowEvent

	// chainOK: the step's completion may chain the next step (RunStep and
	// RunChained, not Run); depth is how many chained steps led here, and
	// next is the chained step the committed completion enqueued.
	chainOK bool
	depth   int
	next    *Chained
}

// writeStart inserts the pending started rows in tx.
func (t *jobTrace) writeStart(tx *store.WorkflowTx) error {
	if t.startLog == nil {
		return nil
	}
	if err := tx.InsertLogs(*t.startLog); err != nil {
		return err
	}
	return tx.InsertEvents(*t.startEvent)
}

// startWritten records that a committed transaction wrote the started rows.
func (t *jobTrace) startWritten() { t.startLog, t.startEvent = nil, nil }

// newJobTrace builds the trace of a job from the state read before it ran.
func (e *Engine) newJobTrace(state *workflow.State, job *store.JobRow) *jobTrace {
	index := 0
	if job.StepIndex.Valid {
		index = int(job.StepIndex.Int64)
	}
	step, ok := state.Step(index)
	t := &jobTrace{stepName: strconv.Itoa(index), stepType: string(workflow.StepSingle), public: state.Public()}
	if ok {
		t.stepName, t.stepType = step.Name(index), string(step.Type())
	}
	t.input = phpjson.ObjectValue(t.public)
	t.context = phpjson.ObjectValue(phpjson.NewObject())
	if it, isBranch := e.kinds.branchItem(job.Payload); isBranch {
		in := phpjson.NewObject()
		in.Set("state", phpjson.ObjectValue(t.public))
		in.Set("item", it.Item)
		in.Set("item_index", phpjson.Int(it.Index))
		t.input = phpjson.ObjectValue(in)
		c := phpjson.NewObject()
		c.Set("item", it.Item)
		c.Set("item_index", phpjson.Int(it.Index))
		t.context = phpjson.ObjectValue(c)
		t.bufContext = t.context
	} else if ok && !step.IsLegacy() && t.stepType != string(workflow.StepSingle) {
		if _, typed := step.Get("type"); typed {
			in := phpjson.NewObject()
			in.Set("state", phpjson.ObjectValue(t.public))
			in.Set("definition", step.Value())
			t.input = phpjson.ObjectValue(in)
		}
	}
	return t
}

// consume empties the trace buffer, as ExecutionContext::consume_trace.
func (t *jobTrace) consume() (input, context phpjson.Value, ok bool) {
	if t.consumed {
		return phpjson.Null(), phpjson.Null(), false
	}
	t.consumed = true
	return t.input, t.bufContext, true
}

// encodeValue is json_encode for an event column; null stays NULL.
func encodeValue(v phpjson.Value) ([]byte, error) {
	if v.IsNull() {
		return nil, nil
	}
	return phpjson.Encode(v)
}

// eventBuilder writes one workflow_events row.
type eventBuilder struct {
	ev  store.WorkflowEvent
	err error
}

func newEvent(workflowID int64, job *store.JobRow, stepIndex int, t *jobTrace, handler, event string) *eventBuilder {
	b := &eventBuilder{ev: store.WorkflowEvent{
		WorkflowID: workflowID, JobID: store.Int(job.ID), StepIndex: stepIndex,
		StepName: store.String(t.stepName), StepType: store.String(t.stepType),
		Handler: handler, Event: event, Attempt: store.Int(int64(job.Attempts)),
	}}
	if job.Queue != "" {
		b.ev.Queue = store.String(job.Queue)
	}
	return b
}

func (b *eventBuilder) set(dst *[]byte, v phpjson.Value) *eventBuilder {
	if b.err == nil {
		*dst, b.err = encodeValue(v)
	}
	return b
}

func (b *eventBuilder) input(v phpjson.Value) *eventBuilder  { return b.set(&b.ev.Input, v) }
func (b *eventBuilder) output(v phpjson.Value) *eventBuilder { return b.set(&b.ev.Output, v) }
func (b *eventBuilder) before(o *phpjson.Object) *eventBuilder {
	return b.set(&b.ev.StateBefore, phpjson.ObjectValue(o))
}
func (b *eventBuilder) after(o *phpjson.Object) *eventBuilder {
	return b.set(&b.ev.StateAfter, phpjson.ObjectValue(o))
}
func (b *eventBuilder) context(v phpjson.Value) *eventBuilder { return b.set(&b.ev.Context, v) }

// traceLists sets the artifacts and chunks columns from a step's trace
// (left NULL when it has none).
func (b *eventBuilder) traceLists(t *stepTrace) *eventBuilder {
	if t != nil && t.artifacts != nil {
		b.set(&b.ev.Artifacts, phpjson.List(t.artifacts...))
	}
	if t != nil && t.chunks != nil {
		b.set(&b.ev.Chunks, phpjson.List(t.chunks...))
	}
	return b
}
func (b *eventBuilder) errorValue(v phpjson.Value) *eventBuilder {
	return b.set(&b.ev.Error, v)
}
func (b *eventBuilder) duration(d time.Duration) *eventBuilder {
	b.ev.DurationMS = store.Int(max(0, d.Milliseconds()))
	return b
}

func (b *eventBuilder) build() (store.WorkflowEvent, error) { return b.ev, b.err }

// jobLog is a log row of a workflow job (job, workflow, step, handler,
// queue; "" queue written as "default").
func jobLog(job *store.JobRow, workflowID int64, stepIndex int, event string) store.LogRow {
	q := job.Queue
	if q == "" {
		q = "default"
	}
	return store.LogRow{
		JobID: store.Int(job.ID), WorkflowID: store.Int(workflowID),
		StepIndex: store.Int(int64(stepIndex)), Handler: job.Handler, Queue: q, Event: event,
	}
}

// completedLog is the `completed` row of a workflow job: attempt NULL,
// unlike a plain job's (spec §9).
func (e *Engine) completedLog(job *store.JobRow, workflowID int64, stepIndex int, d time.Duration) store.LogRow {
	l := jobLog(job, workflowID, stepIndex, store.EventCompleted)
	l.DurationMS = store.Int(max(0, d.Milliseconds()))
	l.MemoryPeakKB = store.Int(e.memoryKB())
	return l
}
