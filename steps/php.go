package steps

import (
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// The engine's PHP reading rules under the short names the kinds' code
// uses.
var (
	toString       = workflow.PHPString
	toInt          = workflow.PHPInt
	phpTrim        = workflow.PHPTrim
	phpArray       = workflow.PHPArray
	isArray        = workflow.PHPIsArray
	valuesEqual    = workflow.PHPValuesEqual
	truthy         = workflow.PHPTruthy
	phpValues      = workflow.PHPValues
	isPHPIntKey    = workflow.PHPIsIntKey
	cloneObject    = workflow.PHPCopy
	itoa           = strconv.Itoa
	optionalString = workflow.PHPOptionalString
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

// get is one key of an object, null when missing or when o is nil.
func get(o *phpjson.Object, key string) phpjson.Value {
	if o == nil {
		return phpjson.Null()
	}
	v, _ := o.Get(key)
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

func stringList(ss []string) phpjson.Value {
	vs := make([]phpjson.Value, len(ss))
	for i, s := range ss {
		vs[i] = phpjson.String(s)
	}
	return phpjson.List(vs...)
}
