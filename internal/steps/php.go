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
