package phppool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
)

// The pool also runs a workflow's PHP callables that have no Go
// implementation, as the engine's CallableRunner (internal/engine): a for_each
// reducer, a repeat condition, and compensations with on_cancel and
// on_deadline handlers (all Compensation::handle).
var _ engine.CallableRunner = (*Pool)(nil)

// RunReducer calls the class's ForEachReducer::reduce(state, aggregate[,
// payload]) and returns the array it returned, json_encode'd ("[]" when
// empty). A PHP exception is an *Error.
func (p *Pool) RunReducer(ctx context.Context, class string, state, aggregate, payload []byte) ([]byte, error) {
	return p.runCallable(ctx, &stepCall{kind: "reducer", class: class, state: state, aggregate: aggregate, payload: payload})
}

// RunCondition calls the class's RepeatCondition::matches(state[,
// payload]).
func (p *Pool) RunCondition(ctx context.Context, class string, state, payload []byte) (bool, error) {
	out, err := p.runCallable(ctx, &stepCall{kind: "condition", class: class, state: state, payload: payload})
	if err != nil {
		return false, err
	}
	var res struct {
		Matches *bool `json:"matches"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Matches == nil {
		return false, &Error{Class: ClassProtocolError, Message: fmt.Sprintf("repeat condition %s: the PHP worker returned %s, not {\"matches\":bool}", class, out)}
	}
	return *res.Matches, nil
}

// RunCompensation calls the class's Compensation::handle(state[,
// payload]); a class PHP does not know is skipped, as the plugin skips
// it.
func (p *Pool) RunCompensation(ctx context.Context, class string, state, payload []byte) error {
	_, err := p.runCallable(ctx, &stepCall{kind: "compensation", class: class, state: state, payload: payload})
	return err
}

func (p *Pool) runCallable(ctx context.Context, c *stepCall) ([]byte, error) {
	if c.class == "" {
		return nil, fmt.Errorf("phppool: a %s without its class", c.kind)
	}
	req := &request{ctx: ctx, step: c, reply: make(chan error, 1)}
	if err := p.submit(ctx, req); err != nil {
		return nil, err
	}
	if len(req.output) == 0 || bytes.Equal(req.output, []byte("null")) {
		return []byte("[]"), nil
	}
	return req.output, nil
}

// encodeCallable builds a run request of kind "reducer", "condition" or
// "compensation": the class, the state, the reducer's aggregate and the
// payload, as the engine encoded them.
func encodeCallable(seq uint64, c *stepCall) ([]byte, error) {
	if c.kind == "metadata" {
		return encodeMetadata(seq, c.class), nil
	}
	payload := c.payload
	if len(payload) == 0 {
		payload = []byte("[]")
	}
	if err := checkObject("state", c.state); err != nil {
		return nil, err
	}
	if err := checkObject("payload", payload); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 128+len(c.class)+len(c.state)+len(c.aggregate)+len(payload))
	b = append(b, `{"type":"run","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"kind":`...)
	b = append(b, phpjson.EncodeString(c.kind)...)
	b = append(b, `,"class":`...)
	b = append(b, phpjson.EncodeString(c.class)...)
	b = append(b, `,"state":`...)
	b = append(b, c.state...)
	if c.kind == "reducer" {
		if err := checkObject("aggregate", c.aggregate); err != nil {
			return nil, err
		}
		b = append(b, `,"aggregate":`...)
		b = append(b, c.aggregate...)
	}
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}'), nil
}
