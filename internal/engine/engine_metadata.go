package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/workflow"
)

// classSettingsWait bounds one read of a class's settings.
const classSettingsWait = 30 * time.Second

// readClassSettings reads the settings of every PHP class the workflow's
// steps name, before a step's handler runs and its transaction opens: the
// transaction that writes the next step's job (or a retry, or a branch)
// then finds them cached instead of waiting for PHP with row locks held.
// A class read once costs nothing more.
func (e *Engine) readClassSettings(ctx context.Context, state *workflow.State) error {
	r, ok := e.classMeta.(workflow.MetadataReader)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, classSettingsWait)
	defer cancel()
	for _, step := range state.Steps() {
		for _, c := range workflow.StepClasses(step) {
			if c == "" || workflow.IsPlaceholderHandler(c) || e.handlers.Registered(c) {
				continue
			}
			if _, err := r.ClassMetadata(ctx, c); err != nil {
				return fmt.Errorf("%w (%s): %w", workflow.ErrClassSettings, c, err)
			}
		}
	}
	return nil
}

// metadata is the engine's HandlerMetadataSource: a Go step handler's
// registered metadata, else that of EngineConfig.Metadata, the source of
// the handler classes the engine has no Go step handler for (the PHP pool
// reads a PHP class's attributes and config(); see queuety's registry).
// Every step job the engine enqueues (next steps, parallel and for_each
// branches, children's first steps, retries and resumes) takes its
// defaults from it, as the plugin's StepDispatchOptions::resolve reads
// HandlerMetadata::from_class; in a transaction through Advance.metadata,
// which never waits for PHP with rows locked.
func (e *Engine) metadata() workflow.HandlerMetadataSource {
	if e.classMeta == nil {
		return e.handlers
	}
	return engineMetadata{e}
}

type engineMetadata struct{ e *Engine }

func (m engineMetadata) HandlerMetadata(handler string) workflow.HandlerMetadata {
	if m.e.handlers.Registered(handler) {
		return m.e.handlers.HandlerMetadata(handler)
	}
	return m.e.classMeta.HandlerMetadata(handler)
}

// metadataPeeker is a class metadata source that can start reading a
// class without waiting for it (the PHP pool).
type metadataPeeker interface {
	PeekClassMetadata(class string) (workflow.HandlerMetadata, bool)
}

// prefetchMetadata starts reading the classes of the step after index
// while step index runs, so the transaction that enqueues it finds them
// cached instead of waiting for a free PHP process.
func (e *Engine) prefetchMetadata(state *workflow.State, index int) {
	p, ok := e.classMeta.(metadataPeeker)
	if !ok {
		return
	}
	step, ok := state.Step(index + 1)
	if !ok {
		return
	}
	for _, c := range workflow.StepClasses(step) {
		if c != "" && !workflow.IsPlaceholderHandler(c) && !e.handlers.Registered(c) {
			p.PeekClassMetadata(c)
		}
	}
}
