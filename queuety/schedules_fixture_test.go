package queuety

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
)

// scheduleFixture is a schedule_* recording: every snapshot's schedules,
// jobs and logs, and the payloads the plugin's handlers received.
type scheduleFixture struct {
	Snapshots []struct {
		After     string           `json:"after"`
		Schedules []map[string]any `json:"schedules"`
		Jobs      []map[string]any `json:"jobs"`
		Logs      []map[string]any `json:"logs"`
	} `json:"snapshots"`
	Calls []struct {
		Snapshot int             `json:"snapshot"`
		Payload  json.RawMessage `json:"payload"`
	} `json:"calls"`
}

var scheduleColumns = []string{"id", "handler", "payload", "queue", "expression", "expression_type", "last_run",
	"next_run", "overlap_policy", "enabled", "created_at"}

// movedBack reads the "next_run set 3 h in the past" of a step.
var movedBack = regexp.MustCompile(`next_run set (\d+) (s|minute|h|days) in the past`)

func movedBy(t *testing.T, after string) time.Duration {
	m := movedBack.FindStringSubmatch(after)
	require.NotNil(t, m, after)
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"s": time.Second, "minute": time.Minute, "h": time.Hour, "days": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit
}

// TestScheduleFixturesReplay starts from the rows the plugin wrote when it
// created the schedules, and takes each recorded step: a tick (after the
// recording's SQL moved next_run into the past, at the recorded tick time)
// or a worker claim. Every schedule, job and log row must then be the
// plugin's (job and log times by presence), except the buffer policy's
// pinned fix: a buffered run leaves its row due (see docs/compat.md).
func TestScheduleFixturesReplay(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"schedule_interval", "schedule_cron", "schedule_overlap"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
			require.NoError(t, err)
			var f scheduleFixture
			require.NoError(t, json.Unmarshal(b, &f))

			first := f.Snapshots[0]
			clk := clock.NewFake(parseTime(t, first.Schedules[0]["created_at"]))
			c := newTestClient(t, func(cfg *Config) {
				cfg.Clock = clk
				cfg.Concurrency = 1
				cfg.Queues = []string{"default", "critical"} // the recording's worker_queues
			})
			ctx := context.Background()
			insertScheduleRows(t, c, first.Schedules)

			var mu sync.Mutex
			var received []string
			reg := NewRegistry()
			for _, h := range []string{"noop", "record", "report"} {
				h := h
				reg.HandleFunc(h, func(_ context.Context, j *Job) error {
					if h == "record" { // RecordHandler reports what it got
						mu.Lock()
						received = append(received, string(j.RawPayload))
						mu.Unlock()
					}
					return nil
				})
			}
			w, err := c.NewWorker(reg)
			require.NoError(t, err)

			schedules := c.store.Tables()["schedules"]
			prev := first.Schedules
			// want is what we expect of the schedule rows: the plugin's,
			// but a buffered row keeps what it had.
			want := cloneRows(prev)
			for _, snap := range f.Snapshots[1:] {
				switch {
				case strings.Contains(snap.After, "tick() returned"):
					tickAt := clk.Now().Add(2 * time.Second)
					for i, r := range snap.Schedules {
						if r["last_run"] != nil && r["last_run"] != prev[i]["last_run"] {
							tickAt = parseTime(t, r["last_run"])
						}
					}
					moved := map[int]string{}
					if strings.Contains(snap.After, "in the past") {
						back := store0(tickAt.Add(-2 * time.Second).Add(-movedBy(t, snap.After)))
						_, err := c.store.DB().Exec("UPDATE `"+schedules+"` SET next_run = ?", back)
						require.NoError(t, err)
						for i := range want {
							moved[i] = back
						}
					}
					clk.Set(tickAt)
					res, err := c.TickSchedules(ctx)
					require.NoError(t, err)
					ret, _ := strconv.Atoi(regexp.MustCompile(`returned (\d+)`).FindStringSubmatch(snap.After)[1])
					require.Equal(t, ret, res.Dispatched, "%s: jobs dispatched", snap.After)
					want = cloneRows(snap.Schedules)
					for i, r := range snap.Schedules {
						if r["overlap_policy"] == "buffer" && ret == 0 && strings.Contains(snap.After, "still pending") {
							// The plugin pushed next_run a whole interval on; the
							// run waits, due, for the handler to be idle.
							want[i]["next_run"] = moved[i]
							require.Equal(t, 1, res.Waiting, snap.After)
						}
					}
				case strings.Contains(snap.After, "worker ran job"):
					require.Equal(t, 1, stepOnce(t, w), snap.After)
				default:
					t.Fatalf("unknown step %q", snap.After)
				}
				compareScheduleRows(t, c, snap.After, want)
				compareJobs(t, c, snap.After, snap.Jobs)
				compareLogs(t, c, snap.After, snap.Logs)
				prev = snap.Schedules
			}
			var calls []string
			for _, call := range f.Calls {
				var compact bytes.Buffer
				require.NoError(t, json.Compact(&compact, call.Payload))
				calls = append(calls, compact.String())
			}
			require.Equal(t, calls, received, "the payloads the record handler got")
		})
	}
}

func store0(t time.Time) string { return t.UTC().Format(time.DateTime) }

func cloneRows(rows []map[string]any) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{}
		for k, v := range r {
			out[i][k] = v
		}
	}
	return out
}

// insertScheduleRows writes recorded schedule rows as the plugin left them.
func insertScheduleRows(t *testing.T, c *Client, rows []map[string]any) {
	t.Helper()
	for _, r := range rows {
		args := make([]any, len(scheduleColumns))
		for i, col := range scheduleColumns {
			args[i] = r[col]
		}
		q := fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", c.store.Tables()["schedules"],
			strings.Join(scheduleColumns, ","), strings.TrimSuffix(strings.Repeat("?,", len(scheduleColumns)), ","))
		_, err := c.store.DB().Exec(q, args...)
		require.NoError(t, err)
	}
}

// compareScheduleRows checks every column of the schedule rows, times
// included: the tick ran at the recorded time.
func compareScheduleRows(t *testing.T, c *Client, step string, want []map[string]any) {
	t.Helper()
	got := tableRows(t, c, "schedules", "id")
	require.Len(t, got, len(want), "%s: schedule rows", step)
	for i, w := range want {
		for _, col := range scheduleColumns {
			require.Equal(t, norm(w[col]), norm(got[i][col]), "%s: schedule %v column %s", step, w["id"], col)
		}
	}
}
