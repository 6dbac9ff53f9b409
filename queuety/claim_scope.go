package queuety

import (
	"log/slog"
	"sync"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
)

// claimScope is what a worker claims, fixed when it is built: the plain
// handlers, the workflow step classes, and which of the jobs only PHP can
// run otherwise (batch and chain callbacks, state machine actions) it
// takes. The claimer filters its claims with it, the registration
// publishes it (fleet.go), and the start-up reports say what it leaves to
// others (startup_report.go, machine_claim.go).
type claimScope struct {
	claimScopeParams
	// phpOnly is the claim filter for what only PHP can run, built once
	// (phpOnlyClaims).
	phpOnly     store.ClaimParams
	phpOnlyOnce sync.Once
}

// claimScopeParams are the worker's choices and what the reports read.
type claimScopeParams struct {
	// Handlers are the plain handlers claimed; nil claims every handler
	// (ClaimAll, or a fallback such as the PHP pool).
	Handlers []string
	// Steps: workflow steps are claimed (Config.Workflows), those of
	// StepHandlers and the placeholders, or every step when AllSteps (the
	// engine's step runner, the PHP pool, runs any class).
	Steps        bool
	AllSteps     bool
	StepHandlers []string
	Reg          *Registry
	// What the start-up reports and the registration read and write.
	Store     *store.Store
	Log       *slog.Logger
	Clock     clock.Clock
	Namespace string
	Queues    []string
	WorkerID  string
}

func newClaimScope(p claimScopeParams) *claimScope { return &claimScope{claimScopeParams: p} }

// claimable is the claim filter of the handlers and steps.
func (s *claimScope) claimable() store.ClaimParams {
	return store.ClaimParams{Handlers: s.Handlers, WorkflowHandlers: s.StepHandlers, AllWorkflowSteps: s.Steps && s.AllSteps}
}
