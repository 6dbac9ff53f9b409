// Package steps holds the runtime of Queuety's step kinds, one file per
// kind, behind the workflow.Kind interface. The engine is given the kinds
// it runs (workflow.NewEngine(store, handlers, steps.All()...)) and looks a
// step's kind up by its _steps "type"; package workflow never imports this
// one.
//
// To add a kind:
//
//  1. Write <kind>.go here with a type whose Type() returns the step type,
//     and implement only the optional hooks of workflow.Kind the kind
//     needs (a placeholder job, branches, its own enqueue, ...); every
//     hook it lacks behaves as for a single step.
//  2. Add it to All.
//  3. Teach the model to write it: the step type and placeholder
//     constants (workflow/enums.go) and a builder method, if users build
//     it in Go.
package steps

import "github.com/queuety-go/queuety/workflow"

// All returns Queuety's step kinds.
func All() []workflow.Kind {
	return []workflow.Kind{single{}, delay{}, repeat{}, parallel{}, startWorkflows{}, runWorkflow{}, waitForSignal{}, waitForWorkflows{}, forEach{}, localActivity{}}
}
