package workflow_test

import (
	"github.com/queuety-go/queuety/steps"
	"github.com/queuety-go/queuety/workflow"
)

func init() { workflow.TestKinds = steps.All() }
