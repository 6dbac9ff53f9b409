package engine

import (
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// stepTrace is what a step's output carried under _queuety_trace, read as
// ExecutionContext::merge_trace_payload reads it: the PHP pool sends the
// trace_input/trace_output/trace_context calls, the artifacts put during
// the step and a streaming step's chunks this way, and advance_step writes
// them on the step_completed event.
type stepTrace struct {
	input, output       phpjson.Value // Null when not set
	context             *phpjson.Object
	artifacts, chunks   []phpjson.Value
	hasInput, hasOutput bool
}

// takeStepTrace reads out's _queuety_trace (nil when there is none).
func takeStepTrace(out *phpjson.Object) *stepTrace {
	if out == nil {
		return nil
	}
	raw, ok := out.Get(workflow.KeyQueuetyTrace)
	if !ok || !phpjson.IsArray(raw) {
		return nil
	}
	payload := phpjson.AsArray(raw)
	t := &stepTrace{}
	if v, ok := payload.Get("input"); ok {
		t.input, t.hasInput = v, true
	}
	if v, ok := payload.Get("output"); ok {
		t.output, t.hasOutput = v, true
	}
	if v, ok := payload.Get("context"); ok && phpjson.IsArray(v) {
		t.context = stringKeyed(v)
	}
	for _, list := range []struct {
		key string
		dst *[]phpjson.Value
	}{{"artifacts", &t.artifacts}, {"chunks", &t.chunks}} {
		if v, ok := payload.Get(list.key); ok {
			for _, e := range phpjson.Values(v) {
				if phpjson.IsArray(e) {
					*list.dst = append(*list.dst, phpjson.ObjectValue(stringKeyed(e)))
				}
			}
		}
	}
	return t
}

// mergeInto applies the trace to the event's input, output and context as
// advance_step does: an array input or output replaces the default, the
// context is merged into the worker's (string keys only).
func (t *stepTrace) mergeInto(input, output, context phpjson.Value) (phpjson.Value, phpjson.Value, phpjson.Value) {
	if t == nil {
		return input, output, context
	}
	if t.hasInput && phpjson.IsArray(t.input) {
		input = t.input
	}
	if t.hasOutput && phpjson.IsArray(t.output) {
		output = phpjson.ObjectValue(phpjson.AsArray(t.output))
	}
	if t.context != nil {
		merged := phpjson.NewObject()
		if phpjson.IsArray(context) {
			merged = phpjson.CloneObject(phpjson.AsArray(context))
		}
		for k, v := range t.context.All() {
			merged.Set(k, v)
		}
		context = phpjson.ObjectValue(merged)
	}
	return input, output, context
}

// stringKeyed is ensure_string_keys: the entries of a PHP array whose keys
// are not integers.
func stringKeyed(v phpjson.Value) *phpjson.Object {
	out := phpjson.NewObject()
	o, ok := v.AsObject()
	if !ok {
		return out
	}
	for k, e := range o.All() {
		if _, err := strconv.ParseInt(k, 10, 64); err != nil {
			out.Set(k, e)
		}
	}
	return out
}
