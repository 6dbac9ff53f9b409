// Package steps holds the runtime of Queuety's step kinds, one file per
// kind, behind the engine.Kind interface and its optional hooks
// (internal/engine/kind.go). The composition root (package queuety) gives
// the engine the kinds it runs (engine.EngineConfig{Kinds: steps.All()}),
// and the engine looks a step's kind up by its _steps "type"; neither
// package workflow nor package engine imports this one. A kind acts on a
// step only through *engine.Advance, the step transaction, or
// *engine.Run, a claimed placeholder job.
//
// It is internal with the engine: the kinds are a closed set mirrored
// from the PHP plugin's step types (internal/engine's package doc says
// why).
//
// To add a kind:
//
//  1. Write <kind>.go here with a type whose Type() returns the step type,
//     and implement only the optional hooks of engine.Kind the kind
//     needs (a placeholder job, branches, its own enqueue, ...); every
//     hook it lacks behaves as for a single step.
//  2. Add it to All.
//  3. Teach the model to write it: the step type and placeholder
//     constants (workflow/enums.go), the placeholder in
//     engine.Placeholders (internal/engine/engine.go), Step.Definition
//     (workflow/step_defs.go) and a builder method, if users build it in
//     Go.
package steps

import (
	"github.com/queuety-go/queuety/internal/engine"
)

// All returns Queuety's step kinds.
func All() []engine.Kind {
	return []engine.Kind{single{}, delay{}, repeat{}, parallel{}, startWorkflows{}, runWorkflow{}, waitForSignal{}, waitForWorkflows{}, forEach{}, localActivity{}}
}
