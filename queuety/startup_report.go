package queuety

import (
	"context"
	"slices"
	"strings"

	store "github.com/queuety-go/queuety/sql"
)

// reportLeftWork warns about pending jobs on the worker's queues that it
// will not claim, and says what would run them: a worker that silently
// leaves a backlog is the first trap of a new setup.
func (s *claimScope) reportLeftWork(ctx context.Context) {
	pending, err := s.Store.PendingHandlers(ctx, s.Queues)
	if err != nil {
		s.Log.Warn("could not read the pending jobs for the start-up report", "err", err)
		return
	}
	for _, p := range pending {
		if why := s.wontClaim(p); why != "" {
			s.Log.Warn("pending jobs this worker will not run", "handler", p.Handler, "jobs", p.N, "why", why)
		}
	}
	s.reportMixedFleet(ctx, pending) // fleet.go
}

// wontClaim says why this worker will not claim p's jobs, or "".
func (s *claimScope) wontClaim(p store.PendingHandler) string {
	if p.IsStep {
		switch {
		case !s.Steps:
			return "workflow steps are off (--no-workflows; Config.Workflows)"
		case s.AllSteps || slices.Contains(s.StepHandlers, p.Handler):
			return ""
		default:
			return "no Go step handler for this class: register one (RegisterStep) or run PHP steps with --php"
		}
	}
	if s.Handlers == nil || slices.Contains(s.Handlers, p.Handler) {
		return ""
	}
	return "no Go handler: register one, run PHP handlers with --php, or leave it to the plugin's workers"
}

func handlerSummary(h []string) string {
	if h == nil {
		return "all (claim-all)"
	}
	return strings.Join(h, ",")
}
