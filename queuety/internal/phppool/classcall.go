package phppool

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
)

// The pool runs the plugin's PHP classes that are not jobs for the
// daemon: batch callbacks, chain catches, state actions and guards.
var _ queuety.ClassCaller = (*Pool)(nil)

// CallClass calls c.Method on a new instance of c.Class in the next free
// PHP process (request kind "call") and returns what it returned,
// json_encode'd ("null" for nothing). A PHP exception is an *Error.
func (p *Pool) CallClass(ctx context.Context, c queuety.ClassCall) ([]byte, error) {
	if c.Class == "" || c.Method == "" {
		return nil, fmt.Errorf("phppool: a class call without its class or method")
	}
	req := &request{ctx: ctx, step: &stepCall{kind: "call", class: c.Class, call: &c}, reply: make(chan error, 1)}
	if err := p.submit(ctx, req); err != nil {
		return nil, err
	}
	if len(req.output) == 0 {
		return []byte("null"), nil
	}
	return req.output, nil
}

// encodeClassCall builds a "call" request: the class, the method, the
// argument list as the caller encoded it, and the call's options.
func encodeClassCall(seq uint64, c *queuety.ClassCall) ([]byte, error) {
	args := c.Args
	if len(args) == 0 {
		args = []byte("[]")
	}
	if err := checkObject("argument list", args); err != nil {
		return nil, err
	}
	opts, err := json.Marshal(struct {
		FitArity        bool   `json:"fit_arity,omitempty"`
		Optional        bool   `json:"optional,omitempty"`
		Contract        string `json:"contract,omitempty"`
		MissingMessage  string `json:"missing_message,omitempty"`
		ContractMessage string `json:"contract_message,omitempty"`
	}{c.FitArity, c.Optional, c.Contract, c.MissingMessage, c.ContractMessage})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 96+len(c.Class)+len(c.Method)+len(args)+len(opts))
	b = append(b, `{"type":"run","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"kind":"call","class":`...)
	b = append(b, phpjson.EncodeString(c.Class)...)
	b = append(b, `,"method":`...)
	b = append(b, phpjson.EncodeString(c.Method)...)
	b = append(b, `,"args":`...)
	b = append(b, args...)
	b = append(b, `,"options":`...)
	b = append(b, opts...)
	return append(b, '}'), nil
}
