package queuety

import (
	"errors"
	"time"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// ClassMetadataSource is what a fallback that runs PHP classes (the PHP
// pool, queuety/internal/phppool) knows of them: a handler's or step class's
// #[QueuetyHandler] / #[QueuetyStep] attributes and config(), read once per
// class. With such a fallback the worker applies them where the plugin
// does: the engine writes them into the step jobs it enqueues, the claim
// honours their rate limit, and retries their max_attempts and backoff.
type ClassMetadataSource interface {
	// HandlerMetadata returns a class's metadata, reading it if needed.
	workflow.HandlerMetadataSource
	// PeekClassMetadata returns it only if known already, and otherwise
	// starts reading it (a claim holding row locks does not wait).
	PeekClassMetadata(class string) (workflow.HandlerMetadata, bool)
}

// ErrPHPDown marks (errors.Is) a fallback's error that says it cannot run
// PHP at all for now, rather than that one read or call failed: with many
// sites, a site's PHP pool that failed to start again at its retry
// (queuety/internal/poolset). The rows a claim deferred for a PHP class's
// settings then cannot be taken until it runs again, so they do not hold
// up a drain: Worker.Drained counts a round that could only defer them as
// empty, and Worker.PHPDown says why. They stay pending, attempts
// unspent, and the next rounds ask again (a pool is tried again on demand).
var ErrPHPDown = errors.New("PHP cannot run")

// classMetadata is the fallback's ClassMetadataSource, or nil.
func (r *Registry) classMetadata() ClassMetadataSource { return fallbackAs[ClassMetadataSource](r) }

// goHandler reports whether name has its own Go handler (not the
// fallback).
func (r *Registry) goHandler(name string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.m[name]
	return ok
}

// goStep reports whether a workflow step class has a Go step handler.
func (r *Registry) goStep(class string) bool {
	if _, ok := r.steps.LookupStep(class); ok {
		return true
	}
	_, ok := r.steps.LookupItem(class)
	return ok
}

// phpClass reports whether a row's handler runs in the fallback as a PHP
// class: no Go handler of its kind, and not a placeholder.
func (r *Registry) phpClass(row *store.JobRow) bool {
	if workflow.IsPlaceholderHandler(row.Handler) {
		return false
	}
	if row.WorkflowID.Valid {
		return !r.goStep(row.Handler)
	}
	return !r.goHandler(row.Handler)
}

// classRetrySettings applies a PHP class's max_attempts and backoff to a
// plain job run by the fallback (Worker::resolve_handler_retry_settings),
// or a Contracts\Job's $tries, $timeout and $backoff (JobMetadata);
// __queuety_runtime still wins, applied after.
func (r *Registry) classRetrySettings(row *store.JobRow, s *attemptSettings) {
	src := r.classMetadata()
	if src == nil || row.WorkflowID.Valid || !r.phpClass(row) {
		return
	}
	m := src.HandlerMetadata(row.Handler)
	if j := m.Job; j != nil {
		// A Contracts\Job: its own properties, as Worker::process_job
		// reads them; $timeout replaces the global limit (--job-timeout)
		// rather than running inside it.
		if j.Tries > 0 {
			s.maxAttempts = int(min(j.Tries, 255))
		}
		if j.Timeout > 0 {
			s.timeout = time.Duration(j.Timeout) * time.Second
		}
		if l, ok := j.Backoff.AsList(); ok && len(l) > 0 {
			s.backoff = *backoffOf(j.Backoff)
		}
		return
	}
	if m.MaxAttempts > 0 {
		s.maxAttempts = int(min(m.MaxAttempts, 255))
	}
	if b := backoffOf(m.Backoff); b != nil {
		s.backoff = *b
	}
}
