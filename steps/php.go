package steps

import (
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// field is Step.Get without the presence flag: null when missing.
func field(s workflow.Step, key string) phpjson.Value {
	v, _ := s.Get(key)
	return v
}

// stateField is State.Get without the presence flag: null when missing.
func stateField(s *workflow.State, key string) phpjson.Value {
	v, _ := s.Get(key)
	return v
}

// runtimeErrorf is the RuntimeException the plugin throws with the message.
func runtimeErrorf(format string, args ...any) error {
	return &workflow.RuntimeError{Message: fmt.Sprintf(format, args...)}
}

// setIf sets key unless v is null (array_filter of nulls).
func setIf(o *phpjson.Object, key string, v phpjson.Value) {
	if !v.IsNull() {
		o.Set(key, v)
	}
}

// optString is s, or null when it is empty.
func optString(s string) phpjson.Value {
	if s == "" {
		return phpjson.Null()
	}
	return phpjson.String(s)
}
