package queuety

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// A mixed fleet: the plugin's workers claim any handler on the queues they
// serve, the plugin's WP-Cron worker (queuety_cron_process) one job a
// minute on `default`, so a Go-only handler's job there can be taken by
// PHP and buried as "Handler not found". Go-only jobs belong on queues no
// PHP worker serves (docs/compat.md, "A mixed fleet"). Each worker says
// what it claims in its registration; `status` lists what no live worker
// runs, and a worker warns at start when its Go handlers' jobs sit where
// PHP claims.

// PHPSeenWindow is how far back `status` and the start-up check look for
// jobs a PHP worker ran.
const PHPSeenWindow = 15 * time.Minute

// WorkerClaims is what one worker claims (workers.claims).
type WorkerClaims struct {
	// AllHandlers: every plain handler (--claim-all, or a PHP pool as the
	// fallback); else Handlers lists them.
	AllHandlers bool     `json:"all_handlers"`
	Handlers    []string `json:"handlers"`
	// Steps: "none" (workflows off), "all" (a PHP pool runs every step
	// class) or "listed": StepHandlers and every __queuety_* placeholder.
	Steps        string   `json:"steps"`
	StepHandlers []string `json:"step_handlers"`
	// Batches: batch jobs (batch_id set) are claimed.
	Batches bool `json:"batches"`
}

// claims describes what this worker claims.
func (s *claimScope) claims() WorkerClaims {
	c := WorkerClaims{AllHandlers: s.Handlers == nil, Handlers: s.Handlers, Steps: "none", StepHandlers: s.StepHandlers}
	if c.Handlers == nil {
		c.Handlers = []string{}
	}
	if c.StepHandlers == nil {
		c.StepHandlers = []string{}
	}
	// Batch jobs whose callbacks are PHP classes need the pool; without one
	// the claim leaves those to PHP (machine_claim.go).
	c.Batches = s.Reg.classCaller() != nil
	if s.Steps {
		c.Steps = "listed"
		if s.AllSteps {
			c.Steps = "all"
		}
	}
	return c
}

// runs reports whether a worker with these claims runs a pending job of
// handler (a workflow step when step, a batch job when batch).
func (c WorkerClaims) runs(handler string, step, batch bool) bool {
	switch {
	case batch:
		return c.Batches && (c.AllHandlers || slices.Contains(c.Handlers, handler))
	case step:
		return c.Steps == "all" || (c.Steps == "listed" && (strings.HasPrefix(handler, "__queuety_") || slices.Contains(c.StepHandlers, handler)))
	}
	return c.AllHandlers || slices.Contains(c.Handlers, handler)
}

// publishClaims writes the worker's claims into its registration.
func (s *claimScope) publishClaims(ctx context.Context) {
	b, err := json.Marshal(s.claims())
	if err == nil {
		err = s.Store.SetWorkerClaims(ctx, s.Namespace, s.WorkerID, string(b))
	}
	if err != nil {
		s.Log.Warn("could not record what this worker claims; status will not count it", "err", err)
	}
}

// reportMixedFleet warns at start about this worker's Go handlers whose
// pending jobs sit on a queue PHP workers take jobs from: a queue where a
// PHP worker ran a job lately, or `default` (the plugin's WP-Cron worker)
// when the tables show the plugin at work: a PHP worker seen on any queue,
// or pending jobs on this worker's queues that only another runtime runs.
// Tables with neither (dev's demo, a Go-only site) have no PHP worker to
// warn about.
func (s *claimScope) reportMixedFleet(ctx context.Context, pending []store.PendingHandler) {
	if s.Handlers == nil {
		return // claim-all or a PHP pool: it runs PHP's handlers itself
	}
	since := s.Clock.Now().Add(-PHPSeenWindow)
	seen, err := s.Store.PHPSeenQueues(ctx, since)
	if err != nil {
		s.Log.Warn("could not look for PHP workers on the queues", "err", err)
	}
	leftToOthers := 0
	for _, p := range pending {
		if s.wontClaim(p) != "" {
			leftToOthers += p.N
		}
	}
	plugin := len(seen) > 0 || leftToOthers > 0
	var exposed []string
	for _, q := range s.Queues {
		if slices.Contains(seen, q) || (q == DefaultQueue && plugin) {
			exposed = append(exposed, q)
		}
	}
	if len(exposed) == 0 {
		return
	}
	// Plain jobs of Go handlers (not the built-in queuety.*), and steps of
	// Go step handlers: a PHP worker fails those, and their workflow.
	// Placeholders are PHP's too, so PHP runs them right.
	var goOnly []string
	for _, p := range pending {
		switch {
		case p.IsStep && slices.Contains(s.StepHandlers, p.Handler) && !strings.HasPrefix(p.Handler, "__queuety_"):
			goOnly = append(goOnly, p.Handler)
		case !p.IsStep && !strings.HasPrefix(p.Handler, "queuety.") && slices.Contains(s.Handlers, p.Handler):
			goOnly = append(goOnly, p.Handler)
		}
	}
	if len(goOnly) == 0 {
		return
	}
	s.Log.Warn("jobs of Go handlers are pending on queues PHP workers claim from: a PHP worker that lacks the handler buries them as Handler not found; dispatch Go-only handlers to a queue only queuety workers serve (docs/compat.md, A mixed fleet)",
		"queues", exposed, "handlers", goOnly, "php_seen", seen, "jobs_left_to_others", leftToOthers)
}

// UnclaimedJobs lists, per queue, the pending jobs no live worker
// registration (heartbeated within WorkerStaleAfter, serving the queue)
// claims. A registration that did not say what it claims (an older build,
// an external HTTP worker) is counted as claiming everything on its
// queues. PHP workers do not register: their queues are marked PHPSeen
// when one ran a job there lately, and their jobs are listed either way.
func (c *Client) UnclaimedJobs(ctx context.Context) ([]Unclaimed, error) {
	now := c.cfg.Clock.Now()
	workers, err := c.store.LiveWorkers(ctx, now.Add(-c.cfg.WorkerStaleAfter))
	if err != nil {
		return nil, err
	}
	pending, err := c.store.PendingGroups(ctx)
	if err != nil {
		return nil, err
	}
	seen, err := c.store.PHPSeenQueues(ctx, now.Add(-PHPSeenWindow))
	if err != nil {
		return nil, err
	}
	type live struct {
		queues []string
		claims *WorkerClaims // nil: not said
	}
	ws := make([]live, len(workers))
	for i, lw := range workers {
		ws[i].queues = lw.Queues
		if lw.Claims.Valid {
			var cl WorkerClaims
			if json.Unmarshal([]byte(lw.Claims.String), &cl) == nil {
				ws[i].claims = &cl
			}
		}
	}
	out := []Unclaimed{}
	for _, p := range pending {
		run := slices.ContainsFunc(ws, func(l live) bool {
			return slices.Contains(l.queues, p.Queue) && (l.claims == nil || l.claims.runs(p.Handler, p.IsStep, p.IsBatch))
		})
		if run {
			continue
		}
		kind := "job"
		switch {
		case p.IsBatch:
			kind = "batch"
		case p.IsStep:
			kind = "step"
		}
		out = append(out, Unclaimed{Queue: p.Queue, Handler: p.Handler, Kind: kind, Jobs: p.N, PHPSeen: slices.Contains(seen, p.Queue)})
	}
	return out, nil
}
