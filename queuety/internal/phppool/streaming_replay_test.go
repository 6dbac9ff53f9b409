package phppool_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

// streamFixture is the part of streaming_step_artifacts.json this replay
// reads: every table of every snapshot, as recorded.
type streamFixture struct {
	Snapshots []map[string]json.RawMessage `json:"snapshots"`
}

// rows is one table of one snapshot.
func (f streamFixture) rows(t *testing.T, snap int, table string) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, json.Unmarshal(f.Snapshots[snap][table], &out), "snapshot %d %s", snap, table)
	return out
}

// Columns that hold times, compared as set or NULL only. The id of a row
// the daemon or PHP inserted is not compared either: the rows are matched
// in id order.
var streamReplayTimes = map[string]bool{
	"available_at": true, "reserved_at": true, "completed_at": true, "failed_at": true,
	"created_at": true, "updated_at": true, "started_at": true, "duration_ms": true,
}

// TestReplayStreamingStepArtifacts replays streaming_step_artifacts: the
// recorded workflow row and its first job are loaded as the plugin
// dispatched them, a worker with workflows on runs every step in the PHP
// pool (one job at a time, as the recording's worker), and the jobs,
// chunks, artifacts and workflow_events rows end as recorded, times and
// auto-increment ids aside.
//
// Observed points: after the StreamingStep's first attempt threw after two
// chunks (snapshot 2: chunks kept, heartbeat_data, the retry pending);
// inside stream() of attempt 2 after its last chunk (snapshot 3, held there
// by a row lock, see below); and after the workflow completed (snapshot
// 5). Snapshot 4, between the stream step's completion and the next
// step's claim, is not observed: the worker runs straight through it; its
// rows are all still in snapshot 5 but the chunks, gone by then (checked).
//
// Expected differences: the step_completed event of the stream step
// carries the chunks with their values (the plugin bug writes chunk_index
// and content null; the recording is asserted to hold the nulls), its
// context is the shared step class's trace_context() call, and inside
// stream() the step_started event of the running attempt is not written
// yet.
func TestReplayStreamingStepArtifacts(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../testdata/queuety-plugin/streaming_step_artifacts.json")
	require.NoError(t, err)
	var f streamFixture
	require.NoError(t, json.Unmarshal(b, &f))
	require.Len(t, f.Snapshots, 7)

	c := newClient(t, func(cfg *queuety.Config) {
		cfg.Workflows = true
		cfg.Concurrency = 1
	})
	db := clientstore.Of(c).DB()
	tables := clientstore.Of(c).Tables()

	// The dispatch, as recorded (ids included: the rows the daemon adds
	// take the next ones).
	for _, table := range []string{"workflows", "jobs", "logs"} {
		for _, row := range f.rows(t, 0, table) {
			var cols []string
			var args []any
			for k, v := range row {
				cols = append(cols, "`"+k+"`")
				args = append(args, v)
			}
			_, err := db.Exec(fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", tables[table],
				strings.Join(cols, ","), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",")), args...)
			require.NoError(t, err, table)
		}
	}

	pool := dbAppPool(t, c, "testdata/stream-app.php")
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)

	// The fix's expectation, from the recording's own chunk rows (snapshot
	// 3 holds all three): the event's entries with their values.
	recordedChunks := f.rows(t, 3, "chunks")
	require.Len(t, recordedChunks, 3)
	var fixed []string
	for _, ch := range recordedChunks {
		fixed = append(fixed, fmt.Sprintf(`{"job_id":%s,"workflow_id":%s,"step_index":%s,"chunk_index":%s,"content":%s}`,
			str(ch["job_id"]), str(ch["workflow_id"]), str(ch["step_index"]), str(ch["chunk_index"]), phpjson.EncodeString(ch["content"].(string))))
	}
	fixedChunks := "[" + strings.Join(fixed, ",") + "]"
	require.Equal(t, `[{"job_id":2,"workflow_id":1,"step_index":1,"chunk_index":0,"content":"Hello"},{"job_id":2,"workflow_id":1,"step_index":1,"chunk_index":1,"content":" w\u00f6rld"},{"job_id":2,"workflow_id":1,"step_index":1,"chunk_index":2,"content":"\/done"}]`, fixedChunks)

	// got reads a table in id order, as the snapshots list it.
	got := func(table string) []map[string]any {
		rows, err := db.Queryx("SELECT * FROM `" + tables[table] + "` ORDER BY id")
		require.NoError(t, err)
		defer rows.Close()
		var out []map[string]any
		for rows.Next() {
			m := map[string]any{}
			require.NoError(t, rows.MapScan(m))
			out = append(out, m)
		}
		require.NoError(t, rows.Err())
		return out
	}
	// compareRows checks one table against rows of a snapshot, column by
	// column; compare against all the snapshot's rows.
	var compareRows func(snap int, table string, want []map[string]any)
	compare := func(snap int, table string) {
		t.Helper()
		compareRows(snap, table, f.rows(t, snap, table))
	}
	compareRows = func(snap int, table string, want []map[string]any) {
		t.Helper()
		have := got(table)
		after := string(f.Snapshots[snap]["after"])
		require.Equal(t, len(want), len(have), "%s: %s rows", after, table)
		for i, w := range want {
			for col, wv := range w {
				if col == "id" && table != "workflows" && table != "jobs" {
					continue
				}
				hv, ok := have[i][col]
				require.True(t, ok, "%s: %s has no column %s", after, table, col)
				where := fmt.Sprintf("%s: %s row %d (%v) %s", after, table, i, w["id"], col)
				switch {
				case streamReplayTimes[col]:
					require.Equal(t, wv == nil, hv == nil, "%s set or NULL", where)
				case table == "workflow_events" && col == "error" && wv != nil:
					// The message and class; the trace is the plugin's stack.
					var we, he map[string]any
					require.NoError(t, json.Unmarshal([]byte(wv.(string)), &we))
					require.NoError(t, json.Unmarshal([]byte(str(hv)), &he), where)
					require.Equal(t, []any{we["message"], we["class"]}, []any{he["message"], he["class"]}, where)
				case table == "workflow_events" && col == "chunks" && wv != nil:
					// The plugin bug: the same entries, nulls in place of values.
					require.Equal(t, strings.NewReplacer(`"chunk_index":0,"content":"Hello"`, `"chunk_index":null,"content":null`,
						`"chunk_index":1,"content":" w\u00f6rld"`, `"chunk_index":null,"content":null`,
						`"chunk_index":2,"content":"\/done"`, `"chunk_index":null,"content":null`).Replace(fixedChunks), wv, "the recording holds the nulls")
					require.Equal(t, fixedChunks, str(hv), where)
				case table == "workflow_events" && col == "context" && w["event"] == "step_completed" && w["step_index"] == float64(1):
					require.Nil(t, wv)
					require.Equal(t, `{"chunks_seen":3}`, str(hv), where+" (the step class's trace_context())")
				default:
					require.Equal(t, str(wv), str(hv), where)
				}
			}
		}
	}

	// Attempt 1 of the stream step throws after two chunks: kept, the
	// job's heartbeat_data counts them, and the retry waits its backoff.
	waitFor(t, 20*time.Second, "the stream step's failed attempt", func() bool {
		var n int
		require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM `"+tables["jobs"]+"` j JOIN `"+tables["workflow_events"]+
			"` e ON e.job_id = j.id AND e.event = 'step_failed' WHERE j.step_index = 1 AND j.status = 'pending' AND j.attempts = 1"))
		return n == 1
	})
	for _, table := range []string{"workflows", "jobs", "chunks", "artifacts", "workflow_events"} {
		compare(2, table)
	}
	var future bool
	require.NoError(t, db.Get(&future, "SELECT available_at > NOW() FROM `"+tables["jobs"]+"` WHERE step_index = 1"))
	require.True(t, future, "the retry waits its backoff")

	// Snapshot 3 is inside stream() of attempt 2, after its last chunk.
	// To stop there, this transaction holds the two kept chunk rows (by
	// primary key: record locks only, so the new chunk's INSERT and the
	// job's beat go through); the step's completion deletes its chunks and
	// waits on them, after every chunk is stored and beaten.
	hold, err := db.Beginx()
	require.NoError(t, err)
	defer func() { _ = hold.Rollback() }()
	var kept []int64
	require.NoError(t, hold.Select(&kept, "SELECT id FROM `"+tables["chunks"]+"` WHERE id IN (?, ?) ORDER BY id FOR UPDATE", 1, 2))
	require.Equal(t, []int64{1, 2}, kept)

	// As the recording: available_at forced to NOW(); the retry resumes
	// from the two kept chunks, and the store step writes the artifacts.
	_, err = db.Exec("UPDATE `" + tables["jobs"] + "` SET available_at = NOW() WHERE step_index = 1")
	require.NoError(t, err)
	waitFor(t, 20*time.Second, "the third chunk, beaten", func() bool {
		var hb *string
		require.NoError(t, db.Get(&hb, "SELECT heartbeat_data FROM `"+tables["jobs"]+"` WHERE step_index = 1"))
		return hb != nil && *hb == `{"streaming_chunks":3}`
	})
	for _, table := range []string{"workflows", "jobs", "chunks", "artifacts"} {
		compare(3, table)
	}
	// One difference while the step runs: the daemon writes a step's
	// step_started event (and `started` log row) in the transaction that
	// settles it, not before it runs as the plugin does; it is there, as
	// recorded, once the step completed (snapshot 5 below).
	recorded := f.rows(t, 3, "workflow_events")
	last := recorded[len(recorded)-1]
	require.Equal(t, []any{"step_started", float64(2)}, []any{last["event"], last["attempt"]})
	compareRows(3, "workflow_events", recorded[:len(recorded)-1])
	require.NoError(t, hold.Rollback())
	waitFor(t, 20*time.Second, "the workflow's completion", func() bool {
		var status string
		require.NoError(t, db.Get(&status, "SELECT status FROM `"+tables["workflows"]+"` WHERE id = 1"))
		return status == "completed"
	})
	// The last snapshot before the outside upsert.
	for _, table := range []string{"workflows", "jobs", "chunks", "artifacts", "workflow_events"} {
		compare(5, table)
	}
	require.Empty(t, f.rows(t, 4, "chunks"), "deleted on the step's completion")
	require.Equal(t, `{"streaming_chunks":3}`, f.rows(t, 3, "jobs")[1]["heartbeat_data"], "beaten once per chunk")
}
