package steps_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// The replay tests load the rows the real plugin left after a snapshot,
// let the engine run the same job, and compare every row of every
// workflow table with the plugin's next snapshot. Times, durations, memory
// figures and error traces are compared by presence; everything else, the
// state bytes included, exactly.

var replayTables = []string{"workflows", "jobs", "logs", "workflow_events", "workflow_dependencies", "signals", "workflow_dispatch_keys"}

type replaySnapshot struct {
	After string
	Rows  map[string][]map[string]any
}

func loadReplay(t *testing.T, name string) []replaySnapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var raw struct {
		Snapshots []map[string]json.RawMessage `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	var out []replaySnapshot
	for _, s := range raw.Snapshots {
		snap := replaySnapshot{Rows: map[string][]map[string]any{}}
		require.NoError(t, json.Unmarshal(s["after"], &snap.After))
		for _, tbl := range replayTables {
			var rows []map[string]any
			d := json.NewDecoder(bytes.NewReader(s[tbl]))
			d.UseNumber()
			require.NoError(t, d.Decode(&rows))
			snap.Rows[tbl] = rows
		}
		out = append(out, snap)
	}
	return out
}

// clone copies a snapshot's rows, so corrections leave the original
// (loaded for the next transition) alone.
func (s replaySnapshot) clone() replaySnapshot {
	c := replaySnapshot{After: s.After, Rows: map[string][]map[string]any{}}
	for tbl, rows := range s.Rows {
		for _, r := range rows {
			m := make(map[string]any, len(r))
			for k, v := range r {
				m[k] = v
			}
			c.Rows[tbl] = append(c.Rows[tbl], m)
		}
	}
	return c
}

// load replaces the tables' contents with a snapshot's rows.
func (env *engineEnv) load(snap replaySnapshot) {
	env.T.Helper()
	for _, tbl := range replayTables {
		name := env.Store.Tables()[tbl]
		_, err := env.DB.Exec("TRUNCATE TABLE `" + name + "`")
		require.NoError(env.T, err)
		for _, r := range snap.Rows[tbl] {
			cols := make([]string, 0, len(r))
			for c := range r {
				cols = append(cols, c)
			}
			slices.Sort(cols)
			args := make([]any, len(cols))
			for i, c := range cols {
				args[i] = sqlArg(r[c])
			}
			q := fmt.Sprintf("INSERT INTO `%s` (`%s`) VALUES (%s)", name, strings.Join(cols, "`,`"),
				strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
			_, err := env.DB.Exec(q, args...)
			require.NoError(env.T, err, "%s row %v", tbl, r["id"])
		}
		// Ids continue after the recorded ones, as in the plugin's run.
	}
}

func sqlArg(v any) any {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return v
}

var replayTimeColumns = map[string]bool{
	"available_at": true, "reserved_at": true, "completed_at": true, "failed_at": true, "created_at": true,
	"started_at": true, "deadline_at": true, "received_at": true, "satisfied_at": true,
}

var replayPresenceColumns = map[string]bool{"duration_ms": true, "memory_peak_kb": true, "error_trace": true, "error": true}

// compare checks every table against the snapshot's rows.
func (env *engineEnv) compare(what string, want replaySnapshot) {
	env.T.Helper()
	for _, tbl := range replayTables {
		rows, err := env.DB.Queryx("SELECT * FROM `" + env.Store.Tables()[tbl] + "` ORDER BY id")
		require.NoError(env.T, err)
		var got []map[string]any
		for rows.Next() {
			m := map[string]any{}
			require.NoError(env.T, rows.MapScan(m))
			got = append(got, m)
		}
		require.NoError(env.T, rows.Close())
		exp := want.Rows[tbl]
		require.Len(env.T, got, len(exp), "%s: %s rows", what, tbl)
		for i, w := range exp {
			for col, wv := range w {
				g := got[i][col]
				switch {
				case replayTimeColumns[col], replayPresenceColumns[col]:
					require.Equal(env.T, wv == nil, g == nil, "%s: %s %v (%v) %s presence", what, tbl, w["id"], w["event"], col)
				default:
					require.Equal(env.T, replayNorm(wv), replayNorm(g), "%s: %s %v (%v) column %s", what, tbl, w["id"], w["event"], col)
				}
			}
		}
	}
}

func replayNorm(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		return string(x)
	case json.Number:
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return x.UTC().Format(time.DateTime)
	}
	return fmt.Sprint(v)
}

var ranJob = regexp.MustCompile(`worker ran job (\d+) \(([^)]+)\)`)

// replayCorrections are recorded values that come from PHP's 2-second
// state cache (the worker read a state older than the row it then
// advanced); the engine reads the row, so it writes the fresh state. Keyed
// by file and snapshot index; each patches the expected rows.
var replayCorrections = map[string]map[int]func(rows map[string][]map[string]any){
	// The plugin ran the parent's step after the nested workflow on its
	// cached state {"n":1} (fixtures README): it wrote n=2 where the row
	// held n=3. The engine reads the row and writes n=4.
	"wf_run_workflow.json": {
		5: func(rows map[string][]map[string]any) {
			for _, wf := range rows["workflows"] {
				if replayNorm(wf["id"]) == "1" {
					wf["state"] = strings.Replace(wf["state"].(string), `{"n":2,`, `{"n":4,`, 1)
				}
			}
			for _, ev := range rows["workflow_events"] {
				switch replayNorm(ev["id"]) {
				case "8":
					ev["input"], ev["state_before"] = `{"n":3}`, `{"n":3}`
				case "9":
					ev["input"], ev["output"], ev["state_after"] = `{"n":3}`, `{"n":4}`, `{"n":4}`
				}
			}
		},
	},
	"wf_parallel.json": {
		// BranchB started on the cached state {"n":10}; the row already
		// held BranchA's output.
		2: func(rows map[string][]map[string]any) {
			fresh := `{"n":10,"a":"from A","shared":"A"}`
			input := `{"state":` + fresh + `,"definition":{"type":"parallel","name":"0","handlers":["BranchA","BranchB"]}}`
			for _, ev := range rows["workflow_events"] {
				switch replayNorm(ev["id"]) {
				case "3":
					ev["input"], ev["state_before"] = input, fresh
				case "4":
					ev["input"] = input
				}
			}
		},
	},
}

// replaySkips are transitions the engine cannot take yet, with why.
var replaySkips = map[string]string{}

func TestReplayPluginFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"wf_sequence.json", "wf_parallel.json", "wf_delay_repeat.json", "wf_for_each_quorum_reducer.json",
		"wf_signal.json", "wf_run_workflow.json",
		"seed003_wait_any_from_state.json", "seed003_wait_for_workflow.json", "seed003_start_agents_group.json",
		"seed003_wait_all_fails.json", "seed003_wait_quorum.json",
	} {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			snaps := loadReplay(t, name)
			env := newEngineEnv(t)
			replayed := 0
			for i := 0; i+1 < len(snaps); i++ {
				if sig := replaySignal(snaps[i], snaps[i+1]); sig != nil {
					env.load(snaps[i])
					require.NoError(t, env.Engine.Signal(env.Ctx(), sig.workflowID, sig.name, sig.payload))
					env.compare(fmt.Sprintf("snapshot %d (%s)", i+1, snaps[i+1].After), snaps[i+1])
					replayed++
					continue
				}
				m := ranJob.FindStringSubmatch(snaps[i+1].After)
				if m == nil {
					continue
				}
				key := fmt.Sprintf("%s#%d", name, i+1)
				if !env.Engine.Supports(m[2]) {
					t.Errorf("%s: %s is not run by the engine", key, m[2])
					continue
				}
				if why, skip := replaySkips[key]; skip {
					t.Logf("skipping %s: %s", key, why)
					continue
				}
				want := snaps[i+1]
				if fix := replayCorrections[name][i+1]; fix != nil {
					want = want.clone()
					fix(want.Rows)
				}
				env.load(snaps[i])
				id, _ := strconv.ParseInt(m[1], 10, 64)
				if err := env.RunJob(id); err != nil {
					t.Logf("%s: step error: %v", key, err)
				}
				env.compare(fmt.Sprintf("snapshot %d (%s)", i+1, want.After), want)
				replayed++
			}
			require.NotZero(t, replayed)
		})
	}
}

type replayedSignal struct {
	workflowID int64
	name       string
	payload    *phpjson.Object
}

// replaySignal returns the Queuety::signal call between two snapshots: the
// signal row the second one added.
func replaySignal(before, after replaySnapshot) *replayedSignal {
	if !strings.Contains(after.After, "Queuety::signal") || len(after.Rows["signals"]) != len(before.Rows["signals"])+1 {
		return nil
	}
	r := after.Rows["signals"][len(after.Rows["signals"])-1]
	id, _ := strconv.ParseInt(replayNorm(r["workflow_id"]).(string), 10, 64)
	v, err := phpjson.DecodeString(r["payload"].(string))
	if err != nil {
		return nil
	}
	return &replayedSignal{workflowID: id, name: r["signal_name"].(string), payload: phpjson.AsArray(v)}
}
