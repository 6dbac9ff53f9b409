package poolset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Handle is one site's way to its pool: what a phppool.Pool is to a
// registry (its fallback), each call run in the pool of the site's key,
// which it starts or waits for as the package doc says.
type Handle struct {
	s *Set
	e *entry
}

var (
	_ queuety.Handler                = (*Handle)(nil)
	_ queuety.ClassCaller            = (*Handle)(nil)
	_ queuety.ClassMetadataSource    = (*Handle)(nil)
	_ workflow.MetadataReader        = (*Handle)(nil)
	_ workflow.TimeLimitStarter      = (*Handle)(nil)
	_ workflow.HandlerMetadataSource = (*Handle)(nil)
	_ workflow.PHPHolder             = (*Handle)(nil)
)

// metadataTimeout bounds HandlerMetadata's read of a class not read yet,
// a pool start included (phppool's own bound for one read).
const metadataTimeout = 30 * time.Second

// run runs fn in the pool, acquired for it; with row locks held
// (workflow.WithRowLocks), only in a pool running now.
func run[T any](ctx context.Context, h *Handle, job bool, fn func(*phppool.Pool) (T, error)) (T, error) {
	p, err := h.s.acquire(ctx, h.e, job, workflow.RowLocksHeld(ctx))
	if err != nil {
		var zero T
		return zero, err
	}
	defer h.s.release(h.e)
	return fn(p)
}

// Handle runs a plain job (queuety.Handler).
func (h *Handle) Handle(ctx context.Context, job *queuety.Job) error {
	_, err := run(ctx, h, true, func(p *phppool.Pool) (struct{}, error) { return struct{}{}, p.Handle(ctx, job) })
	return err
}

// StartsTimeLimit: the pool starts an attempt's time limit when a process
// takes the job, so neither its start nor a wait for a place spends it.
func (h *Handle) StartsTimeLimit() {}

// HandleStep runs a workflow step (the engine's StepRunner).
func (h *Handle) HandleStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error) {
	return run(ctx, h, true, func(p *phppool.Pool) ([]byte, error) { return p.HandleStep(ctx, job, state) })
}

// HandleItem runs a for_each branch (the engine's StepRunner).
func (h *Handle) HandleItem(ctx context.Context, job *store.JobRow, state []byte, item []byte, index int64) ([]byte, error) {
	return run(ctx, h, true, func(p *phppool.Pool) ([]byte, error) { return p.HandleItem(ctx, job, state, item, index) })
}

// RunReducer runs a for_each reducer (the engine's CallableRunner).
func (h *Handle) RunReducer(ctx context.Context, class string, state, aggregate, payload []byte) ([]byte, error) {
	return run(ctx, h, false, func(p *phppool.Pool) ([]byte, error) { return p.RunReducer(ctx, class, state, aggregate, payload) })
}

// RunCondition runs a repeat condition (the engine's CallableRunner).
func (h *Handle) RunCondition(ctx context.Context, class string, state, payload []byte) (bool, error) {
	return run(ctx, h, false, func(p *phppool.Pool) (bool, error) { return p.RunCondition(ctx, class, state, payload) })
}

// RunCompensation runs a compensation (the engine's CallableRunner).
func (h *Handle) RunCompensation(ctx context.Context, class string, state, payload []byte) error {
	_, err := run(ctx, h, false, func(p *phppool.Pool) (struct{}, error) {
		return struct{}{}, p.RunCompensation(ctx, class, state, payload)
	})
	return err
}

// CallClass calls a PHP class's method (queuety.ClassCaller).
func (h *Handle) CallClass(ctx context.Context, c queuety.ClassCall) ([]byte, error) {
	return run(ctx, h, false, func(p *phppool.Pool) ([]byte, error) { return p.CallClass(ctx, c) })
}

// ClassMetadata returns a class's settings, read in the pool the first
// time and kept for the key's life. With row locks held
// (workflow.WithRowLocks) a class not read yet is not waited for: its read
// starts if the pool runs (PeekClassMetadata), and the answer is
// workflow.ErrPHPNotReady.
func (h *Handle) ClassMetadata(ctx context.Context, class string) (workflow.HandlerMetadata, error) {
	if r, ok := h.cached(class); ok {
		return r.m, r.err
	}
	if workflow.RowLocksHeld(ctx) {
		if _, ok := h.PeekClassMetadata(class); ok {
			if r, ok := h.cached(class); ok {
				return r.m, r.err
			}
		}
		return workflow.HandlerMetadata{}, fmt.Errorf("%w: the settings of %s are not read yet", workflow.ErrPHPNotReady, class)
	}
	m, err := run(ctx, h, false, func(p *phppool.Pool) (workflow.HandlerMetadata, error) { return p.ClassMetadata(ctx, class) })
	h.keep(class, m, err)
	return m, err
}

// HandlerMetadata returns a class's settings, or none when they cannot be
// read (logged), for the callers that can go on without them.
func (h *Handle) HandlerMetadata(class string) workflow.HandlerMetadata {
	if r, ok := h.cached(class); ok {
		return r.m
	}
	h.s.mu.Lock()
	life := h.s.life
	h.s.mu.Unlock()
	if life == nil {
		return workflow.HandlerMetadata{}
	}
	ctx, cancel := context.WithTimeout(life, metadataTimeout)
	defer cancel()
	m, err := h.ClassMetadata(ctx, class)
	if err != nil {
		h.s.log.Error("could not read a PHP class's settings; going on without them", "sites", h.label(), "class", class, "err", err)
	}
	return m
}

// PeekClassMetadata returns a class's settings if known; otherwise, with
// the pool running, it starts reading them, and keeps the answer for the
// key as ClassMetadata does (so a pool stopped meanwhile does not lose
// it). It never starts a pool: the claim calls it with row locks held,
// and reads the classes it deferred (ClassMetadata) right after; the
// engine calls it for the next step's classes while a step runs.
func (h *Handle) PeekClassMetadata(class string) (workflow.HandlerMetadata, bool) {
	if r, ok := h.cached(class); ok {
		return r.m, true
	}
	h.s.mu.Lock()
	pool, life := h.e.pool, h.s.life
	reading := h.e.reading[class]
	if pool != nil && !reading {
		h.e.reading[class] = true
	}
	h.s.mu.Unlock()
	if pool == nil || reading {
		return workflow.HandlerMetadata{}, false
	}
	if _, ok := pool.PeekClassMetadata(class); !ok {
		// Being read, by the pool's own Peek: wait for it beside.
		go func() {
			ctx, cancel := context.WithTimeout(life, metadataTimeout)
			defer cancel()
			m, err := pool.ClassMetadata(ctx, class)
			h.keep(class, m, err)
			h.doneReading(class)
		}()
		return workflow.HandlerMetadata{}, false
	}
	// Known to the pool: its answer, error included, comes at once.
	m, err := pool.ClassMetadata(life, class)
	h.keep(class, m, err)
	h.doneReading(class)
	return m, true
}

func (h *Handle) doneReading(class string) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	delete(h.e.reading, class)
}

// Hold waits for the pool (started, or a place at the cap waited for) and
// keeps it until release, as a call running in it would: neither stopped
// when idle nor given away while held (a draining pool still takes calls
// that are not jobs). The engine holds it, no row locked, before it runs
// again a step transaction that found it not running
// (workflow.ErrPHPNotReady).
func (h *Handle) Hold(ctx context.Context) (release func(), err error) {
	if _, err := h.s.acquire(ctx, h.e, false, false); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { h.s.release(h.e) }) }, nil
}

func (h *Handle) cached(class string) (metaResult, bool) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	r, ok := h.e.meta[class]
	return r, ok
}

// keep caches a read PHP answered: the settings, or the exception its
// autoloader threw (asking again would only throw again); a read that
// failed on the way (no pool, a timeout) is asked again next time.
func (h *Handle) keep(class string, m workflow.HandlerMetadata, err error) {
	var pe *phppool.Error
	if err != nil && !errors.As(err, &pe) {
		return
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.e.meta[class] = metaResult{m: m, err: err}
}

func (h *Handle) label() string {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.e.label()
}
