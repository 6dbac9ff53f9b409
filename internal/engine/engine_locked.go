package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// PHP in a step transaction.
//
// A step transaction (stepTxOn) holds its workflow and job rows locked
// while it reads the settings of the PHP classes whose jobs it writes and
// runs a for_each reducer. With many sites a site's PHP pool may not be
// running then (stopped when idle, given away at the pools' cap), and
// starting it or waiting for a place takes seconds, rows and connection
// held. So those calls are made with workflow.WithRowLocks: a class's
// settings come only from what was read, a reducer runs only in a pool
// running now, and otherwise the answer is workflow.ErrPHPNotReady, noted
// in the Advance (phpWait). The transaction is then rolled back whatever
// the body made of it, the classes are read and the pool held
// (workflow.PHPHolder) with no row locked, and the transaction runs again
// from the start: the step's output is kept in memory, so its handler is
// not run again and nothing of the first try is written.

// maxPHPWaits bounds the waits for PHP of one step transaction: a pool
// held stays running and a class read stays read, so a second wait is
// rare; past the bound the step fails as it would on PHP's error.
const maxPHPWaits = 3

// phpWait is what a step transaction lacked from PHP.
type phpWait struct {
	classes []string // class settings not read yet
	pool    bool     // a reducer's pool not running
}

func (w phpWait) any() bool { return w.pool || len(w.classes) > 0 }

// notReadyError rolls back a step transaction that lacked w; err is what
// its body returned.
type notReadyError struct {
	wait phpWait
	err  error
}

func (e *notReadyError) Error() string {
	return fmt.Sprintf("step transaction rolled back to wait for PHP (classes %v, pool %v): %v", e.wait.classes, e.wait.pool, e.err)
}

func (e *notReadyError) Unwrap() error { return workflow.ErrPHPNotReady }

// phpInTx is one transaction's view of PHP: its context, for the calls it
// marks (workflow.WithRowLocks), and what its current run found not ready.
type phpInTx struct {
	ctx  context.Context
	wait phpWait
}

// run runs one try of a transaction's body; one that found PHP not ready
// fails, so that the transaction is rolled back whatever the body made of
// the answers it lacked.
func (p *phpInTx) run(body func() error) error {
	p.wait = phpWait{}
	err := body()
	if p.wait.any() {
		return &notReadyError{wait: p.wait, err: err}
	}
	return err
}

// phpWaits runs tx, one workflow transaction whose Advances carry php;
// when it was rolled back for PHP, it waits for PHP and runs it again.
func (e *Engine) phpWaits(ctx context.Context, tx func(php *phpInTx) error) error {
	var holds phpHolds
	defer holds.release()
	php := &phpInTx{ctx: ctx}
	for waits := 0; ; waits++ {
		err := tx(php)
		var nr *notReadyError
		if !errors.As(err, &nr) || waits == maxPHPWaits {
			return err
		}
		if err := e.waitPHP(ctx, nr.wait, &holds); err != nil {
			return err
		}
	}
}

// workflowTx is store.WorkflowTx for a transaction whose Advances carry
// php (their PHP calls never wait, rows locked).
func (e *Engine) workflowTx(ctx context.Context, body func(tx *store.WorkflowTx, php *phpInTx) error) error {
	return e.phpWaits(ctx, func(php *phpInTx) error {
		return e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
			return php.run(func() error { return body(tx, php) })
		})
	})
}

// phpHolds is the pool holds a step transaction took; released once it
// has run.
type phpHolds struct{ done func() }

func (h *phpHolds) release() {
	if h.done != nil {
		h.done()
	}
}

// waitPHP gets what a rolled-back step transaction lacked, no row locked:
// the classes' settings read (which may start the pool), the pool held.
func (e *Engine) waitPHP(ctx context.Context, w phpWait, holds *phpHolds) error {
	if len(w.classes) > 0 {
		r, ok := e.classMeta.(workflow.MetadataReader)
		if !ok {
			return fmt.Errorf("%w: the class settings source cannot read %v", workflow.ErrPHPNotReady, w.classes)
		}
		rctx, cancel := context.WithTimeout(ctx, classSettingsWait)
		defer cancel()
		for _, c := range w.classes {
			if _, err := r.ClassMetadata(rctx, c); err != nil {
				return fmt.Errorf("%w (%s): %w", workflow.ErrClassSettings, c, err)
			}
		}
	}
	if w.pool && holds.done == nil {
		h, ok := e.runner.(workflow.PHPHolder)
		if !ok {
			return fmt.Errorf("%w: the step runner cannot hold its pool", workflow.ErrPHPNotReady)
		}
		release, err := h.Hold(ctx)
		if err != nil {
			return err
		}
		holds.done = release
	}
	return nil
}

// metadata is the metadata source of the jobs the transaction writes:
// in a step transaction one that never waits for PHP (lockedMetadata),
// in the others the engine's.
func (a *Advance) metadata() workflow.HandlerMetadataSource {
	if _, ok := a.e.classMeta.(workflow.MetadataReader); !ok || a.php == nil {
		return a.e.metadata()
	}
	return lockedMetadata{a}
}

// Metadata is the handler metadata source of the jobs the transaction
// writes (a Go handler's registration, else the class source's, never
// waited for in a step transaction).
func (a *Advance) Metadata() workflow.HandlerMetadataSource { return a.metadata() }

// lockedMetadata reads a class's settings with row locks held: a class
// not read yet is noted for the transaction's wait and has none meanwhile
// (the transaction is rolled back).
type lockedMetadata struct{ a *Advance }

func (m lockedMetadata) HandlerMetadata(handler string) workflow.HandlerMetadata {
	md, _ := m.HandlerMetadataErr(handler) // a class PHP cannot load has none, as before
	return md
}

// HandlerMetadataErr is HandlerMetadata with the class source's failure:
// StepJobs then writes no job rather than one without its settings.
func (m lockedMetadata) HandlerMetadataErr(handler string) (workflow.HandlerMetadata, error) {
	a := m.a
	if a.e.handlers.Registered(handler) {
		return a.e.handlers.HandlerMetadata(handler), nil
	}
	md, err := a.e.classMeta.(workflow.MetadataReader).ClassMetadata(workflow.WithRowLocks(a.php.ctx), handler)
	if err != nil {
		if w := &a.php.wait; errors.Is(err, workflow.ErrPHPNotReady) && !slices.Contains(w.classes, handler) {
			w.classes = append(w.classes, handler)
		}
		return workflow.HandlerMetadata{}, fmt.Errorf("%w (%s): %w", workflow.ErrClassSettings, handler, err)
	}
	return md, nil
}

// LookupReducer returns the reducer of class as the transaction runs it:
// a PHP one only in a pool running now (its absence noted for the
// transaction's wait) in a step transaction.
func (a *Advance) LookupReducer(class string) (workflow.ReducerFunc, bool) {
	fn, ok := a.e.lookupReducer(class)
	if !ok || a.php == nil {
		return fn, ok
	}
	if _, goFn := a.e.handlers.LookupReducer(class); goFn {
		return fn, true
	}
	return func(ctx context.Context, state, aggregate, payload *phpjson.Object) (*phpjson.Object, error) {
		out, err := fn(workflow.WithRowLocks(ctx), state, aggregate, payload)
		if errors.Is(err, workflow.ErrPHPNotReady) {
			a.php.wait.pool = true
		}
		return out, err
	}, true
}
