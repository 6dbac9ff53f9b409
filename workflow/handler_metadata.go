package workflow

import (
	"context"
	"errors"

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

// metadataErr is metadataFor for the sources that can say a read failed.
func metadataErr(src HandlerMetadataSource, handler string) (HandlerMetadata, error) {
	if src == nil || IsPlaceholderHandler(handler) {
		return HandlerMetadata{}, nil
	}
	if strict, ok := src.(interface {
		HandlerMetadataErr(handler string) (HandlerMetadata, error)
	}); ok {
		return strict.HandlerMetadataErr(handler)
	}
	return src.HandlerMetadata(handler), nil
}

// MetadataFor is src's metadata of handler (none for a placeholder).
func MetadataFor(src HandlerMetadataSource, handler string) HandlerMetadata {
	return metadataFor(src, handler)
}
