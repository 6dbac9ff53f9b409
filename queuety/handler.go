package queuety

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/workflow"
)

// Handler runs one attempt of a job. Returning nil completes the job; an
// error fails the attempt (retried with backoff, buried when attempts run
// out). A panic is caught and counts as a failure.
type Handler interface {
	Handle(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler, like http.HandlerFunc.
type HandlerFunc func(ctx context.Context, job *Job) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, job *Job) error { return f(ctx, job) }

// Typed adapts a function taking a decoded payload struct. The payload is
// decoded with encoding/json (reserved __queuety_* keys already removed;
// PHP's empty array `[]` decodes into a struct's or map's zero value). A
// payload that does not decode into T buries the job at once with the
// decode error: the same bytes would fail every attempt.
func Typed[T any](fn func(ctx context.Context, job *Job, payload T) error) Handler {
	return HandlerFunc(func(ctx context.Context, job *Job) error {
		var v T
		if err := job.Decode(&v); err != nil {
			return &InvalidJobError{Reason: "Invalid payload: " + err.Error()}
		}
		return fn(ctx, job, v)
	})
}

// HandlerOption sets a handler's retry and time rules, the Go counterpart of
// a PHP handler's config() / $tries / $backoff / $timeout. A job's
// __queuety_runtime payload key still wins over them, as in Queuety.
type HandlerOption func(*handlerOptions)

type handlerOptions struct {
	maxAttempts int
	backoff     *Backoff
	timeout     time.Duration
	// rateLimit is the handler's config()['rate_limit'] (admission.go).
	rateLimit *workflow.RateLimit
	// meta is a step handler's full class metadata (WithStepMetadata).
	meta *workflow.HandlerMetadata
}

// WithMaxAttempts overrides the row's max_attempts for this handler.
func WithMaxAttempts(n int) HandlerOption {
	return func(o *handlerOptions) { o.maxAttempts = n }
}

// WithBackoff sets the handler's retry delays.
func WithBackoff(b Backoff) HandlerOption {
	return func(o *handlerOptions) { o.backoff = &b }
}

// WithTimeout sets the per-attempt time limit.
func WithTimeout(d time.Duration) HandlerOption {
	return func(o *handlerOptions) { o.timeout = d }
}

// WithRateLimit lets at most n jobs of the handler complete per window
// (config()['rate_limit'] => [n, seconds]): the worker leaves the others
// pending until the window has room, counting the handler's `completed`
// log rows as Queuety's RateLimiter does, PHP workers' included. A job's
// __queuety_runtime.rate_limit wins. Step handlers take theirs from
// workflow.HandlerMetadata.RateLimit.
func WithRateLimit(n int, window time.Duration) HandlerOption {
	return func(o *handlerOptions) {
		o.rateLimit = &workflow.RateLimit{Max: int64(n), Window: int64(window / time.Second)}
	}
}

// WithStepMetadata gives a step handler registered with RegisterStep or
// RegisterItemStep every setting a PHP step class's config() can declare
// (queue, concurrency group and limit, cost units, ...): the step jobs the
// engine enqueues for it are written with them. WithMaxAttempts,
// WithBackoff and WithRateLimit, when also given, win. Plain handlers
// ignore it.
func WithStepMetadata(m workflow.HandlerMetadata) HandlerOption {
	return func(o *handlerOptions) { o.meta = &m }
}

type registered struct {
	h    Handler
	opts handlerOptions
}

// Registry maps handler names (the jobs.handler column) to Go handlers.
type Registry struct {
	mu       sync.RWMutex
	m        map[string]registered
	fallback *registered
	// steps are the Go workflow step handlers (workflow.go).
	steps *workflow.Handlers
	// batches and machines are Go batch callbacks (batch.go) and state
	// actions and guards (machine_registry.go), by PHP class name.
	batches  batchCallbacks
	machines machineFuncs
}

// reservedHandlerPrefix starts the handler names Queuety keeps for its own
// jobs (workflow placeholders, state machine actions, WP-Cron events):
// neither registered nor dispatched.
const reservedHandlerPrefix = "__queuety_"

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{m: map[string]registered{}, steps: workflow.NewHandlers()}
}

// Register adds a handler. Like http.Handle it panics on a programming
// error: an empty or reserved name, a nil handler, a duplicate, or invalid
// options.
func (r *Registry) Register(name string, h Handler, opts ...HandlerOption) {
	switch {
	case strings.TrimSpace(name) == "":
		panic("queuety: Register with an empty handler name")
	case len(name) > 255:
		panic(fmt.Sprintf("queuety: handler name %q is longer than jobs.handler (255)", name))
	case strings.HasPrefix(name, reservedHandlerPrefix):
		panic(fmt.Sprintf("queuety: handler name %q is reserved for Queuety's built-in steps", name))
	case h == nil:
		panic(fmt.Sprintf("queuety: Register(%q) with a nil handler", name))
	}
	var o handlerOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxAttempts < 0 || o.maxAttempts > 255 {
		panic(fmt.Sprintf("queuety: handler %q: max attempts %d outside 1..255", name, o.maxAttempts))
	}
	if o.backoff != nil {
		if err := o.backoff.validate(); err != nil {
			panic(fmt.Sprintf("queuety: handler %q: %v", name, err))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("queuety: handler %q registered twice", name))
	}
	r.m[name] = registered{h: h, opts: o}
}

// HandleFunc registers a function.
func (r *Registry) HandleFunc(name string, fn func(ctx context.Context, job *Job) error, opts ...HandlerOption) {
	r.Register(name, HandlerFunc(fn), opts...)
}

// SetFallback routes every handler name without a Go handler to h (the PHP
// handler pool, for one). A worker whose registry has a fallback claims
// every handler. When h also runs workflow steps (the PHP pool does: it
// implements the engine's StepRunner), a worker with Config.Workflows also
// claims every workflow step and runs the steps without a Go step handler
// there.
func (r *Registry) SetFallback(h Handler, opts ...HandlerOption) {
	if h == nil {
		panic("queuety: SetFallback with a nil handler")
	}
	var o handlerOptions
	for _, opt := range opts {
		opt(&o)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = &registered{h: h, opts: o}
}

// fallbackAs is the fallback as T, one of the optional interfaces the PHP
// pool implements beside Handler, or T's zero value.
func fallbackAs[T any](r *Registry) T {
	var t T
	if r == nil {
		return t
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fallback != nil {
		t, _ = r.fallback.h.(T)
	}
	return t
}

// stepRunner is the fallback's workflow step runner, if it has one.
func (r *Registry) stepRunner() engine.StepRunner { return fallbackAs[engine.StepRunner](r) }

// hasFallback reports whether unknown handlers go to a fallback.
func (r *Registry) hasFallback() bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.fallback != nil
}

func (r *Registry) lookup(name string) (registered, bool) {
	if r == nil {
		return registered{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if h, ok := r.m[name]; ok {
		return h, true
	}
	if r.fallback != nil && !strings.HasPrefix(name, "__queuety_") {
		return *r.fallback, true
	}
	return registered{}, false
}

// Names lists the registered handler names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// decodeJSON is the Typed/Decode path; kept apart so Job stays small.
func decodeJSON(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding payload into %T: %w", v, err)
	}
	return nil
}
