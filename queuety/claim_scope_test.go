package queuety

import (
	"testing"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// TestClaimScopeSaysWhatItLeaves: the scope alone (no database, no
// worker) decides what a worker claims, what it publishes and why it
// leaves a pending handler to others.
func TestClaimScopeSaysWhatItLeaves(t *testing.T) {
	t.Parallel()
	job := func(h string) store.PendingHandler { return store.PendingHandler{Handler: h, N: 1} }
	step := func(h string) store.PendingHandler { return store.PendingHandler{Handler: h, IsStep: true, N: 1} }

	goOnly := newClaimScope(claimScopeParams{Handlers: []string{"a"}, Reg: NewRegistry()})
	require.Empty(t, goOnly.wontClaim(job("a")))
	require.Contains(t, goOnly.wontClaim(job("b")), "no Go handler")
	require.Contains(t, goOnly.wontClaim(step("S")), "workflow steps are off")
	require.Equal(t, WorkerClaims{Handlers: []string{"a"}, Steps: "none", StepHandlers: []string{}}, goOnly.claims())
	require.Equal(t, store.ClaimParams{Handlers: []string{"a"}}, goOnly.claimable())

	listed := newClaimScope(claimScopeParams{Handlers: []string{}, Steps: true, StepHandlers: []string{"S"}, Reg: NewRegistry()})
	require.Empty(t, listed.wontClaim(step("S")))
	require.Contains(t, listed.wontClaim(step("T")), "no Go step handler")
	require.Equal(t, "listed", listed.claims().Steps)
	require.False(t, listed.claimable().AllWorkflowSteps)

	all := newClaimScope(claimScopeParams{Steps: true, AllSteps: true, Reg: NewRegistry()})
	require.Empty(t, all.wontClaim(step("T")))
	require.Empty(t, all.wontClaim(job("anything")), "nil handlers: claim-all")
	require.True(t, all.claims().AllHandlers)
	require.Equal(t, "all", all.claims().Steps)
	require.True(t, all.claimable().AllWorkflowSteps)
}
