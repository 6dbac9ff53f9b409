package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"
)

func logWith(t *testing.T, format string) string {
	t.Helper()
	var out bytes.Buffer
	app := &ucli.App{ErrWriter: &out, Flags: globalFlags(), Action: func(c *ucli.Context) error {
		l, err := newLogger(c)
		if err != nil {
			return err
		}
		l.Info("worker stopping", "grace", 30*time.Second, "in", 1500*time.Microsecond, "running", 3,
			"took", time.Duration(0))
		l.WithGroup("sweep").Info("done", "pause", 20*time.Millisecond)
		return nil
	}}
	require.NoError(t, app.Run([]string{"queuety", "--log-format", format}))
	return out.String()
}

// TestJSONLogDurationsInMS: the JSON format writes every duration as a
// number of milliseconds under <key>_ms; the text format keeps Go's.
func TestJSONLogDurationsInMS(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(logWith(t, "json")), "\n")
	require.Len(t, lines, 2)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	require.Equal(t, float64(30000), rec["grace_ms"])
	require.Equal(t, 1.5, rec["in_ms"])
	require.Equal(t, float64(0), rec["took_ms"])
	require.Equal(t, float64(3), rec["running"])
	require.NotContains(t, rec, "grace")
	require.Contains(t, lines[0], `"grace_ms":30000`)
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	require.Equal(t, map[string]any{"pause_ms": float64(20)}, rec["sweep"])

	text := logWith(t, "text")
	require.Contains(t, text, "grace=30s")
	require.Contains(t, text, "in=1.5ms")
	require.Contains(t, text, "sweep.pause=20ms")
}
