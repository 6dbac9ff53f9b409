package queuety

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/machine"
	"github.com/queuety-go/queuety/workflow"
)

// An entered state's action job gets its action class's concurrency group,
// limit and cost, as the plugin's enqueue_state_action reads them with
// HandlerMetadata::from_class: through the PHP pool (here a stand-in
// answering for the class) when there is one. A class with a Go state
// action, or no pool at all, keeps the defaults: no group, cost 1.
func TestActionJobGetsItsClassSettings(t *testing.T) {
	t.Parallel()
	const def = `{"name":"flow","initial_state":"a","states":{"a":{"name":"a","action":null,"action_class":null,"terminal_status":null,"transitions":[{"event":"go","target_state":"b","guard":null,"guard_class":null,"name":"go"}]},"b":{"name":"b","action":{"class":"LlmAction","payload":[]},"action_class":"LlmAction","terminal_status":null,"transitions":[]}},"queue":"default","priority":0,"max_attempts":3,"definition_version":null,"definition_hash":null}`
	php := &fakePHP{calls: map[string]int{}, meta: map[string]workflow.HandlerMetadata{
		"LlmAction": {ConcurrencyGroup: " llm ", ConcurrencyLimit: 2, CostUnits: 5},
	}}
	withPool := NewRegistry()
	withPool.SetFallback(php)
	goAction := NewRegistry()
	goAction.SetFallback(php)
	goAction.RegisterStateAction("LlmAction", func(context.Context, machine.Call) (json.RawMessage, error) { return nil, nil })

	for name, tc := range map[string]struct {
		reg   *Registry
		group string
		limit int64
		cost  int64
	}{
		"pool":      {reg: withPool, group: "llm", limit: 2, cost: 5},
		"go action": {reg: goAction, cost: 1},
		"no pool":   {reg: NewRegistry(), cost: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, nil)
			ctx := context.Background()
			_, err := c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["state_machines"]+"` (id, name, status, current_state, state, definition) VALUES (1, 'flow', 'waiting_event', 'a', '[]', ?)", def)
			require.NoError(t, err)
			require.NoError(t, c.MachineEvent(ctx, tc.reg, 1, "go", nil))

			job := jobRow(t, c, 1)
			require.Equal(t, machineActionHandler, job.Handler)
			require.Equal(t, tc.group, job.ConcurrencyGroup.String)
			require.Equal(t, tc.group != "", job.ConcurrencyGroup.Valid)
			require.Equal(t, tc.limit, job.ConcurrencyLimit.Int64)
			require.Equal(t, tc.limit != 0, job.ConcurrencyLimit.Valid)
			require.Equal(t, tc.cost, job.CostUnits)
		})
	}
}
