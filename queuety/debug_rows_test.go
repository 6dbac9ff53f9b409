package queuety

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/machine"
	"github.com/queuety-go/queuety/workflow"
)

// TestDebugRowOfAdmittedJobNamesItsKind: with QUEUETY_DEBUG on, an
// admitted Contracts\Job gets the plugin's "Deserializing job class: X"
// row, a handler class "Resolving handler: X", and a state machine's action
// job neither (the plugin runs it before resolving any handler; parity
// row 50).
func TestDebugRowOfAdmittedJobNamesItsKind(t *testing.T) {
	t.Parallel()
	const def = `{"name":"flow","initial_state":"a","states":{"a":{"name":"a","action":null,"action_class":null,"terminal_status":null,"transitions":[{"event":"go","target_state":"b","guard":null,"guard_class":null,"name":"go"}]},"b":{"name":"b","action":{"class":"LlmAction","payload":[]},"action_class":"LlmAction","terminal_status":null,"transitions":[]}},"queue":"default","priority":0,"max_attempts":1,"definition_version":null,"definition_hash":null}`
	c := newTestClient(t, func(cfg *Config) {
		cfg.Debug = true
		cfg.Concurrency = 1
	})
	php := &fakePHP{calls: map[string]int{}, meta: map[string]workflow.HandlerMetadata{
		"SendReport":   {Job: &workflow.JobClassSettings{Tries: 1}},
		"PlainHandler": {},
	}}
	reg := NewRegistry()
	reg.SetFallback(php)
	reg.RegisterStateAction("LlmAction", func(context.Context, machine.Call) (json.RawMessage, error) { return nil, nil })
	ctx := context.Background()
	_, err := c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["state_machines"]+"` (id, name, status, current_state, state, definition) VALUES (1, 'flow', 'waiting_event', 'a', '[]', ?)", def)
	require.NoError(t, err)
	require.NoError(t, c.MachineEvent(ctx, reg, 1, "go", nil))
	for _, h := range []string{"SendReport", "PlainHandler"} {
		_, err := c.Dispatch(ctx, h, map[string]any{})
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "every job attempted", func() bool {
		var n int
		require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE attempts = 0"))
		return n == 0
	})

	var msgs []string
	require.NoError(t, c.store.DB().Select(&msgs, "SELECT JSON_UNQUOTE(JSON_EXTRACT(context, '$.message')) FROM `"+c.store.Tables()["logs"]+"` WHERE event = 'debug' ORDER BY id"))
	require.Contains(t, msgs, "Deserializing job class: SendReport")
	require.Contains(t, msgs, "Resolving handler: PlainHandler")
	require.NotContains(t, msgs, "Resolving handler: SendReport")
	require.NotContains(t, msgs, "Resolving handler: "+machineActionHandler)
	require.NotContains(t, msgs, "Deserializing job class: "+machineActionHandler)
}
