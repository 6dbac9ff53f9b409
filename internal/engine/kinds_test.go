package engine_test

import (
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/steps"
)

func init() { engine.TestKinds = steps.All() }
