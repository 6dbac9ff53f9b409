package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// HandlerMetadata is what Queuety reads from a PHP handler class when it
// enqueues a step job (HandlerMetadata::from_class): the #[QueuetyHandler]
// or #[QueuetyStep] attribute and the class's config() array. It fills
// the job options a step definition leaves open, so the first job of a
// workflow depends on the handler class, not only on the definition.
//
// Go has no PHP classes to reflect on; a dispatcher that wants the plugin's
// rows for a PHP handler supplies the same values through a
// HandlerMetadataSource. Zero fields are "not set".
type HandlerMetadata struct {
	// Queue overrides the workflow queue (note that #[QueuetyHandler]
	// always sets one, "default" unless given).
	Queue string
	// MaxAttempts overrides the workflow's _max_attempts.
	MaxAttempts int64
	// Backoff is written verbatim into __queuety_runtime.backoff: a
	// strategy string or the string-keyed array config() returned
	// (null = none).
	Backoff phpjson.Value
	// RateLimit becomes __queuety_runtime.rate_limit.
	RateLimit *RateLimit
	// ConcurrencyGroup and ConcurrencyLimit go to the job columns; a limit
	// without a group is dropped.
	ConcurrencyGroup string
	ConcurrencyLimit int64
	// CostUnits is the job's cost_units (config() values > 0 only).
	CostUnits int64
	// Job is a Contracts\Job class's own settings (JobMetadata), nil for
	// any other class.
	Job *JobClassSettings
}

// JobClassSettings are the public property defaults of a Contracts\Job
// class the plugin's worker reads for each of its jobs: $tries replaces
// the row's max_attempts, $timeout the global time limit, $backoff the
// retry delays (0 and nil: not set).
type JobClassSettings struct {
	Tries   int64
	Timeout int64 // seconds
	Backoff phpjson.Value
}

// RateLimit is a [max, window seconds] pair.
type RateLimit struct {
	Max    int64
	Window int64
}

// Value is the [max, window] list PHP stores.
func (r RateLimit) Value() phpjson.Value {
	return phpjson.List(phpjson.Int(r.Max), phpjson.Int(r.Window))
}

// HandlerMetadataSource looks up the metadata of a handler class.
type HandlerMetadataSource interface {
	HandlerMetadata(handler string) HandlerMetadata
}

// HandlerMetadataMap is a fixed HandlerMetadataSource; handlers not in the
// map have none (like a PHP class without attributes or config()).
type HandlerMetadataMap map[string]HandlerMetadata

// HandlerMetadata implements HandlerMetadataSource.
func (m HandlerMetadataMap) HandlerMetadata(handler string) HandlerMetadata { return m[handler] }

// metadataFor returns the metadata of handler from src. Placeholders and
// nil sources have none, as no PHP class is named __queuety_*.
func metadataFor(src HandlerMetadataSource, handler string) HandlerMetadata {
	if src == nil || IsPlaceholderHandler(handler) {
		return HandlerMetadata{}
	}
	return src.HandlerMetadata(handler)
}

// ErrClassSettings wraps a failed read of a PHP class's settings. A step
// job is never written without them (the plugin's rows always have them):
// the step waits instead, handed back before its handler runs, or the
// transaction that would write the job rolls back.
var ErrClassSettings = errors.New("could not read a PHP class's settings")

// MetadataReader is a class metadata source whose reads take the caller's
// context and can fail: the PHP pool, which reads a class in a PHP process
// once and then answers from its cache.
type MetadataReader interface {
	ClassMetadata(ctx context.Context, class string) (HandlerMetadata, error)
}

// classSettingsWait bounds one read of a class's settings.
const classSettingsWait = 30 * time.Second

// metadataErr is metadataFor for the sources that can say a read failed.
func metadataErr(src HandlerMetadataSource, handler string) (HandlerMetadata, error) {
	if src == nil || IsPlaceholderHandler(handler) {
		return HandlerMetadata{}, nil
	}
	if strict, ok := src.(interface {
		handlerMetadataErr(handler string) (HandlerMetadata, error)
	}); ok {
		return strict.handlerMetadataErr(handler)
	}
	return src.HandlerMetadata(handler), nil
}

// readClassSettings reads the settings of every PHP class the workflow's
// steps name, before a step's handler runs and its transaction opens: the
// transaction that writes the next step's job (or a retry, or a branch)
// then finds them cached instead of waiting for PHP with row locks held.
// A class read once costs nothing more.
func (e *Engine) readClassSettings(ctx context.Context, state *State) error {
	r, ok := e.classMeta.(MetadataReader)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, classSettingsWait)
	defer cancel()
	for _, step := range state.Steps() {
		for _, c := range stepClasses(step) {
			if c == "" || IsPlaceholderHandler(c) || e.handlers.hasGo(c) {
				continue
			}
			if _, err := r.ClassMetadata(ctx, c); err != nil {
				return fmt.Errorf("%w (%s): %w", ErrClassSettings, c, err)
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
// HandlerMetadata::from_class.
func (e *Engine) metadata() HandlerMetadataSource {
	if e.classMeta == nil {
		return e.handlers
	}
	return engineMetadata{e}
}

type engineMetadata struct{ e *Engine }

func (m engineMetadata) HandlerMetadata(handler string) HandlerMetadata {
	if m.e.handlers.hasGo(handler) {
		return m.e.handlers.HandlerMetadata(handler)
	}
	return m.e.classMeta.HandlerMetadata(handler)
}

// handlerMetadataErr is HandlerMetadata with the class source's failure:
// StepJobs then writes no job rather than one without its settings.
func (m engineMetadata) handlerMetadataErr(handler string) (HandlerMetadata, error) {
	r, ok := m.e.classMeta.(MetadataReader)
	if m.e.handlers.hasGo(handler) || !ok {
		return m.HandlerMetadata(handler), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), classSettingsWait)
	defer cancel()
	md, err := r.ClassMetadata(ctx, handler)
	if err != nil {
		return HandlerMetadata{}, fmt.Errorf("%w (%s): %w", ErrClassSettings, handler, err)
	}
	return md, nil
}

// metadataPeeker is a class metadata source that can start reading a
// class without waiting for it (the PHP pool).
type metadataPeeker interface {
	PeekClassMetadata(class string) (HandlerMetadata, bool)
}

// prefetchMetadata starts reading the classes of the step after index
// while step index runs, so the transaction that enqueues it finds them
// cached instead of waiting for a free PHP process.
func (e *Engine) prefetchMetadata(state *State, index int) {
	p, ok := e.classMeta.(metadataPeeker)
	if !ok {
		return
	}
	step, ok := state.Step(index + 1)
	if !ok {
		return
	}
	for _, c := range stepClasses(step) {
		if c != "" && !IsPlaceholderHandler(c) && !e.handlers.hasGo(c) {
			p.PeekClassMetadata(c)
		}
	}
}
