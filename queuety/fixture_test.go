package queuety

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// The fixtures are rows recorded from the real Queuety plugin after every
// step of a scenario (testdata/queuety-plugin: copied from shared/fixtures, see its README).
// These tests load a recorded "before" state, let our worker take the same
// step, and compare every row and log row with what the plugin left. Times,
// durations, memory figures and traces are compared by presence only.
const fixtureDir = "../testdata/queuety-plugin"

type fixture struct {
	Scenario  string `json:"scenario"`
	Snapshots []struct {
		After string           `json:"after"`
		Jobs  []map[string]any `json:"jobs"`
		Logs  []map[string]any `json:"logs"`
	} `json:"snapshots"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var f fixture
	require.NoError(t, json.Unmarshal(b, &f))
	require.NotEmpty(t, f.Snapshots)
	return f
}

var jobColumns = []string{"id", "queue", "handler", "payload", "payload_hash", "priority", "status", "attempts",
	"max_attempts", "available_at", "reserved_at", "completed_at", "failed_at", "error_message", "workflow_id",
	"step_index", "depends_on", "batch_id", "concurrency_group", "concurrency_limit", "cost_units", "heartbeat_data", "created_at"}

// insertRecorded writes recorded job rows exactly as the plugin left them.
func insertRecorded(t *testing.T, c *Client, rows []map[string]any) {
	t.Helper()
	for _, r := range rows {
		args := make([]any, len(jobColumns))
		for i, col := range jobColumns {
			args[i] = r[col]
		}
		q := fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", c.store.Tables()["jobs"],
			strings.Join(jobColumns, ","), strings.TrimSuffix(strings.Repeat("?,", len(jobColumns)), ","))
		_, err := c.store.DB().Exec(q, args...)
		require.NoError(t, err)
	}
}

var timeColumns = map[string]bool{"available_at": true, "reserved_at": true, "completed_at": true, "failed_at": true, "created_at": true}

// byPresence are compared as null / not null: they differ run to run.
var byPresence = map[string]bool{"duration_ms": true, "memory_peak_kb": true, "error_trace": true}

// compareJobs checks our job rows against the recorded ones.
func compareJobs(t *testing.T, c *Client, step string, want []map[string]any) {
	t.Helper()
	for _, w := range want {
		var got map[string]any
		rows, err := c.store.DB().Queryx("SELECT * FROM `"+c.store.Tables()["jobs"]+"` WHERE id = ?", w["id"])
		require.NoError(t, err)
		require.True(t, rows.Next(), "%s: job %v missing", step, w["id"])
		got = map[string]any{}
		require.NoError(t, rows.MapScan(got))
		rows.Close()
		for _, col := range jobColumns {
			if col == "available_at" {
				// Compare the delay the plugin applied (available_at -
				// created_at in the recording) with ours from now.
				wantDelay := parseTime(t, w["available_at"]).Sub(parseTime(t, w["created_at"]))
				if wantDelay > 0 {
					gotDelay := time.Until(got[col].(time.Time))
					require.InDelta(t, wantDelay.Seconds(), gotDelay.Seconds(), 3, "%s: job %v available_at delay", step, w["id"])
				}
				continue
			}
			if timeColumns[col] {
				require.Equal(t, w[col] == nil, got[col] == nil, "%s: job %v %s presence", step, w["id"], col)
				continue
			}
			require.Equal(t, norm(w[col]), norm(got[col]), "%s: job %v column %s", step, w["id"], col)
		}
	}
}

// tableRows reads every row of one of the Store's tables, ordered by
// order (a column list), as scanned maps.
func tableRows(t *testing.T, c *Client, table, order string) []map[string]any {
	t.Helper()
	rows, err := c.store.DB().Queryx("SELECT * FROM `" + c.store.Tables()[table] + "` ORDER BY " + order)
	require.NoError(t, err)
	defer rows.Close()
	var got []map[string]any
	for rows.Next() {
		m := map[string]any{}
		require.NoError(t, rows.MapScan(m))
		got = append(got, m)
	}
	require.NoError(t, rows.Err())
	return got
}

// compareLogs checks our log rows, in order, against the recorded ones.
func compareLogs(t *testing.T, c *Client, step string, want []map[string]any) {
	t.Helper()
	got := tableRows(t, c, "logs", "id")
	require.Len(t, got, len(want), "%s: log rows", step)
	for i, w := range want {
		for col, wv := range w {
			if col == "id" || col == "created_at" {
				continue
			}
			if byPresence[col] {
				require.Equal(t, wv == nil, got[i][col] == nil, "%s: log %d (%v) %s presence", step, i, w["event"], col)
				continue
			}
			require.Equal(t, norm(wv), norm(got[i][col]), "%s: log %d (%v) column %s", step, i, w["event"], col)
		}
	}
}

// norm makes recorded JSON values and scanned SQL values comparable.
func norm(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		return string(x)
	case float64:
		return fmt.Sprint(int64(x))
	case int64:
		return fmt.Sprint(x)
	case time.Time:
		return store.DateTime(x)
	}
	return fmt.Sprint(v)
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	tm, err := time.Parse(time.DateTime, v.(string))
	require.NoError(t, err)
	return tm
}

// fixtureRegistry has the plugin scenarios' handlers: noop, and flaky,
// which throws RuntimeException("boom: <why>").
func fixtureRegistry() *Registry {
	reg := NewRegistry()
	reg.HandleFunc("noop", func(context.Context, *Job) error { return nil })
	reg.Register("flaky", Typed(func(ctx context.Context, j *Job, p struct {
		Why string `json:"why"`
	}) error {
		return runtimeErr{"boom: " + p.Why}
	}))
	return reg
}

func TestFixtureJobsReplay(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"job_payload_encoding.json", "job_depends_on.json", "job_retry_then_bury.json"} {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, name)
			c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1 })
			insertRecorded(t, c, f.Snapshots[0].Jobs)
			w, err := c.NewWorker(fixtureRegistry())
			require.NoError(t, err)
			for _, snap := range f.Snapshots[1:] {
				switch {
				case strings.Contains(snap.After, "worker ran job"):
					require.Equal(t, 1, stepOnce(t, w), snap.After)
				case strings.Contains(snap.After, "available_at forced to NOW()"):
					_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
					require.NoError(t, err)
				default:
					t.Fatalf("unknown step %q", snap.After)
				}
				compareJobs(t, c, snap.After, snap.Jobs)
				compareLogs(t, c, snap.After, snap.Logs)
			}
			require.Equal(t, 0, stepOnce(t, w), "nothing left to claim")
		})
	}
}

// TestDispatchWritesPluginBytes dispatches the recorded payloads from Go and
// compares the stored bytes and payload_hash with the plugin's.
func TestDispatchWritesPluginBytes(t *testing.T) {
	t.Parallel()
	f := loadFixture(t, "job_payload_encoding.json")
	c := newTestClient(t, nil)
	ctx := context.Background()
	for _, rec := range f.Snapshots[0].Jobs {
		opts := []DispatchOption{WithPriority(Priority(int(rec["priority"].(float64))))}
		if rec["payload_hash"] != nil {
			opts = append(opts, Unique())
		}
		d, err := c.Dispatch(ctx, rec["handler"].(string), []byte(rec["payload"].(string)), opts...)
		require.NoError(t, err)
		j := jobRow(t, c, d.ID)
		require.Equal(t, rec["payload"], j.Payload)
		require.Equal(t, rec["payload_hash"] == nil, !j.PayloadHash.Valid)
		if rec["payload_hash"] != nil {
			require.Equal(t, rec["payload_hash"], j.PayloadHash.String)
		}
	}
	// The same payload built in Go, key by key, encodes to the same bytes.
	d, err := c.Dispatch(ctx, "noop", struct {
		Text   string         `json:"text"`
		Path   string         `json:"path"`
		HTML   string         `json:"html"`
		One    int            `json:"one"`
		Tenth  float64        `json:"tenth"`
		Big    int64          `json:"big"`
		Neg    int            `json:"neg"`
		Empty  []int          `json:"empty"`
		List   []int          `json:"list"`
		Map    map[string]any `json:"map"`
		Nested map[string]any `json:"nested"`
	}{"héllo ✓ 😀", `a/b\c`, "<a href='x'>&</a>", 1, 0.1, 9007199254740993, -5, []int{}, []int{1, 2},
		map[string]any{"k": nil, "t": true}, map[string]any{"e": []int{}}}, Unique())
	require.NoError(t, err)
	require.True(t, d.Existing, "same bytes, same hash: the plugin's row is found")
	require.Equal(t, int64(f.Snapshots[0].Jobs[0]["id"].(float64)), d.ID)
}
