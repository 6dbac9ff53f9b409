package queuety

import (
	"maps"
)

// WithFallback returns a registry with r's Go handlers, step handlers,
// batch callbacks and state-machine functions and its own fallback h: the
// registry of one site of many, whose PHP handlers run in the pool loaded
// for that site. Handlers registered on r afterwards are not in it.
func (r *Registry) WithFallback(h Handler, opts ...HandlerOption) *Registry {
	r.mu.RLock()
	c := &Registry{m: maps.Clone(r.m), steps: r.steps}
	r.mu.RUnlock()
	r.batches.mu.RLock()
	c.batches.m = maps.Clone(r.batches.m)
	r.batches.mu.RUnlock()
	r.machines.mu.RLock()
	c.machines.actions, c.machines.guards = maps.Clone(r.machines.actions), maps.Clone(r.machines.guards)
	r.machines.mu.RUnlock()
	c.SetFallback(h, opts...)
	return c
}
