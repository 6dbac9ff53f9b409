package engine_test

import (
	"testing"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/steps"
)

// engineEnv is the shared engine test environment, running Queuety's step
// kinds; this package's helpers are its methods.
type engineEnv struct{ *enginetest.Env }

func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	return &engineEnv{enginetest.New(t, steps.All())}
}

// fixtureDir holds the plugin's recorded scenarios.
const fixtureDir = "../../testdata/queuety-plugin"

func mustEncode(v phpjson.Value) []byte {
	b, err := phpjson.Encode(v)
	if err != nil {
		return []byte(v.Kind().String())
	}
	return b
}
