package queuety

import (
	"context"
	"strings"

	store "github.com/queuety-go/queuety/sql"
)

// lookupHandler is the registry's lookup, plus the state machine action
// handler, which the registry never hands to its fallback (a __queuety_
// name) and which this package runs itself.
func (w *Worker) lookupHandler(name string) (registered, bool) {
	if name == machineActionHandler && w.reg.runsMachines() {
		rt := w.c.machines(w.reg, w.log)
		return registered{h: HandlerFunc(func(ctx context.Context, job *Job) error {
			return rt.HandleAction(ctx, actionJobOf(job.ID, job.Queue, job.Attempt, string(job.RawPayload)))
		})}, true
	}
	return w.reg.lookup(name)
}

// phpOnlyClaims narrows the claim to the batch jobs and chain links whose
// callbacks this worker can run: all of them with a PHP pool, else those
// whose callback classes have Go implementations. Read from the registry
// once, like the handler names.
func (w *Worker) phpOnlyClaims(p *store.ClaimParams) {
	w.phpOnlyOnce.Do(func() {
		if w.reg.classCaller() != nil {
			w.phpOnly.PHPCallbacks = true
			return
		}
		w.phpOnly.BatchCallbacks = w.reg.batchCallbackNames()
		w.phpOnly.ChainCatches = w.reg.chainCatchNames()
		if w.handlers == nil && !w.reg.runsMachines() {
			w.phpOnly.SkipHandlers = []string{machineActionHandler} // ClaimAll: never bury them as not found
		}
	})
	p.PHPCallbacks, p.BatchCallbacks, p.ChainCatches, p.SkipHandlers =
		w.phpOnly.PHPCallbacks, w.phpOnly.BatchCallbacks, w.phpOnly.ChainCatches, w.phpOnly.SkipHandlers
}

// reportPHPOnly says at start what this worker leaves to PHP workers for
// want of a PHP pool: batches and chains with PHP callbacks, and state
// machine actions.
func (w *Worker) reportPHPOnly() {
	if w.reg.classCaller() != nil {
		return
	}
	left := []string{"batch jobs whose then/catch/finally classes have no Go callback (RegisterBatchCallback)",
		"chain jobs whose catch class has no Go catch (RegisterChainCatch)"}
	if !w.reg.runsMachines() {
		left = append(left, "state machine action jobs (no PHP pool and no Go state action)")
	}
	if len(left) > 0 {
		w.log.Info("without a PHP pool (--php) this worker leaves to PHP workers: " + strings.Join(left, "; "))
	}
}
