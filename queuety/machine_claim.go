package queuety

import (
	"context"
	"strings"

	imachine "github.com/queuety-go/queuety/queuety/internal/machine"
	store "github.com/queuety-go/queuety/sql"
)

// handlerLookup is reg's lookup, plus the state machine action handler,
// which the registry never hands to its fallback (a __queuety_ name) and
// which this package runs itself, on rt.
func handlerLookup(reg *Registry, rt *imachine.Runtime) func(name string) (registered, bool) {
	action := registered{h: HandlerFunc(func(ctx context.Context, job *Job) error {
		return rt.HandleAction(ctx, actionJobOf(job.ID, job.Queue, job.Attempt, string(job.RawPayload)))
	})}
	return func(name string) (registered, bool) {
		if name == machineActionHandler && reg.runsMachines() {
			return action, true
		}
		return reg.lookup(name)
	}
}

// phpOnlyClaims narrows the claim to the batch jobs and chain links whose
// callbacks this worker can run: all of them with a PHP pool, else those
// whose callback classes have Go implementations. Read from the registry
// once, like the handler names.
func (s *claimScope) phpOnlyClaims(p *store.ClaimParams) {
	s.phpOnlyOnce.Do(func() {
		if s.Reg.classCaller() != nil {
			s.phpOnly.PHPCallbacks = true
			return
		}
		s.phpOnly.BatchCallbacks = s.Reg.batchCallbackNames()
		s.phpOnly.ChainCatches = s.Reg.chainCatchNames()
		if s.Handlers == nil && !s.Reg.runsMachines() {
			s.phpOnly.SkipHandlers = []string{machineActionHandler} // ClaimAll: never bury them as not found
		}
	})
	p.PHPCallbacks, p.BatchCallbacks, p.ChainCatches, p.SkipHandlers =
		s.phpOnly.PHPCallbacks, s.phpOnly.BatchCallbacks, s.phpOnly.ChainCatches, s.phpOnly.SkipHandlers
}

// reportPHPOnly says at start what this worker leaves to PHP workers for
// want of a PHP pool: batches and chains with PHP callbacks, and state
// machine actions.
func (s *claimScope) reportPHPOnly() {
	if s.Reg.classCaller() != nil {
		return
	}
	left := []string{"batch jobs whose then/catch/finally classes have no Go callback (RegisterBatchCallback)",
		"chain jobs whose catch class has no Go catch (RegisterChainCatch)"}
	if !s.Reg.runsMachines() {
		left = append(left, "state machine action jobs (no PHP pool and no Go state action)")
	}
	if len(left) > 0 {
		s.Log.Info("without a PHP pool (--php) this worker leaves to PHP workers: " + strings.Join(left, "; "))
	}
}
