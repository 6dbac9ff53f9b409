package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// A machine waiting for "done" (no guard): list, status, event, and the
// errors a script can meet.
func TestMachineCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	def := `{"name":"m","initial_state":"wait","states":{"wait":{"name":"wait","action":null,"action_class":null,"terminal_status":null,"transitions":[{"event":"done","target_state":"end","guard":null,"guard_class":null,"name":"done"}]},"end":{"name":"end","action":null,"action_class":null,"terminal_status":"completed","transitions":[]}},"queue":"default","priority":0,"max_attempts":3,"definition_version":"m.v1","definition_hash":null}`
	_, err := db.Exec("INSERT INTO wp_queuety_state_machines (name, status, current_state, state, definition, definition_version) VALUES ('m', 'waiting_event', 'wait', '{\"a\":1}', ?, 'm.v1')", def)
	require.NoError(t, err)

	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(runOK(t, on(dsn, "machine", "list", "--json")...).stdout), &list))
	require.Len(t, list, 1)
	require.Equal(t, "waiting_event", list[0]["status"])
	require.Contains(t, runOK(t, on(dsn, "machine", "list")...).stdout, "waiting_event")

	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(runOK(t, on(dsn, "machine", "status", "1", "--json")...).stdout), &st))
	require.Equal(t, []any{"done"}, st["available_events"])
	require.Equal(t, map[string]any{"a": float64(1)}, st["state"])

	r := run(t, on(dsn, "machine", "event", "1", "done", "not json")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	r = run(t, on(dsn, "machine", "event", "1", "nope")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "State 'wait' does not allow event 'nope'.")
	r = run(t, on(dsn, "machine", "status", "9")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "machine", "event", "9", "done")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "machine", "list", "--status", "sleeping")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--status")

	out := runOK(t, on(dsn, "machine", "event", "1", "done", `{"b":2,"_hidden":3}`)...).stdout
	require.Contains(t, out, "completed in end")
	out = runOK(t, on(dsn, "machine", "status", "1")...).stdout
	require.Contains(t, out, `state: {"a":1,"b":2}`)
	require.Contains(t, out, "event_rejected")
	require.Contains(t, out, "machine_completed")
}
