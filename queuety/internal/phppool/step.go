package phppool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// The pool runs workflow steps whose class has no Go handler, as the
// workflow engine's StepRunner: a Queuety\Step's handle(state), or a
// Queuety\ForEachHandler's handle_item(state, item, index) for a for_each
// branch. The engine merges the returned output as advance_step does.
var _ engine.StepRunner = (*Pool)(nil)

// stepCall is a workflow step request, or a call of a workflow's
// reducer, condition or compensation (callable.go).
type stepCall struct {
	row   *store.JobRow // nil for a callable
	kind  string        // "step", "item", "reducer", "condition" or "compensation"
	state []byte        // the workflow state, json_encode'd
	item  []byte        // kind "item": the item, json_encode'd
	index int64
	// A callable's class (or registered name), the reducer's aggregate and
	// the structured handler's payload, json_encode'd.
	class     string
	aggregate []byte
	payload   []byte
	call      *queuety.ClassCall // kind "call" (classcall.go)
}

// HandleStep runs a workflow step job's Step class in the next free PHP
// process with the full workflow state (phpjson bytes) and returns the
// array it returned, json_encode'd ("[]" when empty). Supervision, time
// limits and crashes are as for Handle: a PHP exception is an *Error.
func (p *Pool) HandleStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error) {
	return p.runStep(ctx, &stepCall{row: job, kind: "step", state: state})
}

// HandleItem runs a for_each branch: the class's handle_item(state, item,
// index), item being phpjson bytes.
func (p *Pool) HandleItem(ctx context.Context, job *store.JobRow, state []byte, item []byte, index int64) ([]byte, error) {
	return p.runStep(ctx, &stepCall{row: job, kind: "item", state: state, item: item, index: index})
}

func (p *Pool) runStep(ctx context.Context, c *stepCall) ([]byte, error) {
	if c.row == nil {
		return nil, fmt.Errorf("phppool: a step without its job")
	}
	req := &request{ctx: ctx, step: c, reply: make(chan error, 1)}
	if err := p.submit(ctx, req); err != nil {
		return nil, err
	}
	if len(req.output) == 0 {
		return []byte("[]"), nil
	}
	return req.output, nil
}

// encodeStep builds a run request of kind "step" or "item": the job's
// description as for a plain job, and the state (and item) bytes as the
// engine encoded them.
func encodeStep(seq uint64, c *stepCall) ([]byte, error) {
	if c.call != nil {
		return encodeClassCall(seq, c.call)
	}
	if c.row == nil {
		return encodeCallable(seq, c)
	}
	m := jobMeta{
		ID: c.row.ID, Handler: c.row.Handler, Queue: c.row.Queue,
		Attempt: c.row.Attempts, MaxAttempts: c.row.MaxAttempts, Priority: c.row.Priority,
	}
	if c.row.WorkflowID.Valid {
		m.WorkflowID = &c.row.WorkflowID.Int64
	}
	if c.row.StepIndex.Valid {
		m.StepIndex = &c.row.StepIndex.Int64
	}
	meta, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := checkObject("state", c.state); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 128+len(meta)+len(c.state)+len(c.item))
	b = append(b, `{"type":"run","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"kind":`...)
	b = append(b, phpjson.EncodeString(c.kind)...)
	b = append(b, `,"job":`...)
	b = append(b, meta...)
	b = append(b, `,"state":`...)
	b = append(b, c.state...)
	if c.kind == "item" {
		item := c.item
		if len(item) == 0 {
			item = []byte("null")
		}
		b = append(b, `,"item":`...)
		b = append(b, item...)
		b = append(b, `,"item_index":`...)
		b = strconv.AppendInt(b, c.index, 10)
	}
	return append(b, '}'), nil
}

// checkObject makes sure bytes spliced into a frame are a JSON array
// (the engine encodes them with phpjson; only the shape is checked).
func checkObject(what string, b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || !(b[0] == '{' && b[len(b)-1] == '}' || b[0] == '[' && b[len(b)-1] == ']') {
		return fmt.Errorf("the %s is not a JSON array or object", what)
	}
	return nil
}
