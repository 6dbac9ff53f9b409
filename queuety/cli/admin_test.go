package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

func TestStatusAndPauseResume(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)

	// Empty database: header only, JSON [] (not null).
	r := runOK(t, on(dsn, "status")...)
	require.Regexp(t, `^QUEUE\s+PENDING\s+PROCESSING\s+COMPLETED\s+FAILED\s+BURIED\s*\n$`, r.stdout)
	require.Equal(t, "[]\n", runOK(t, on(dsn, "status", "--json")...).stdout)

	dispatch(t, dsn, "--payload", `{"n":1}`, "queuety.noop")
	dispatch(t, dsn, "--payload", `{"n":2}`, "queuety.noop")
	e1 := dispatch(t, dsn, "--queue", "emails", "--payload", `{"n":3}`, "send").ID
	dispatch(t, dsn, "--queue", "emails", "--payload", `{"n":4}`, "send")
	runOK(t, on(dsn, "job", "bury", itoa(e1))...)
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'failed' WHERE id = 4")

	require.Equal(t, "Queue 'emails' paused.\n", runOK(t, on(dsn, "pause", "emails")...).stdout)
	require.Equal(t, "Queue 'idle' paused.\n", runOK(t, on(dsn, "pause", "idle")...).stdout)
	runOK(t, on(dsn, "pause", "idle")...) // pausing twice is fine
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_queue_states` WHERE paused = 1"))

	r = runOK(t, on(dsn, "status")...)
	table, unclaimed, _ := strings.Cut(r.stdout, "\n\n")
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	require.Len(t, lines, 4, r.String())
	// No worker runs: the pending jobs are listed as unclaimed.
	require.Regexp(t, `(?m)^  default\s+queuety.noop\s+job\s+2\s+no$`, unclaimed)
	fields := func(line string) []string { return strings.Fields(line) }
	require.Equal(t, []string{"QUEUE", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "BURIED"}, fields(lines[0]))
	require.Equal(t, []string{"default", "2", "0", "0", "0", "0"}, fields(lines[1]))
	require.Equal(t, []string{"emails", "(paused)", "0", "0", "0", "1", "1"}, fields(lines[2]))
	require.Equal(t, []string{"idle", "(paused)", "0", "0", "0", "0", "0"}, fields(lines[3]))

	var stats []map[string]json.RawMessage
	decodeJSON(t, runOK(t, on(dsn, "status", "--json")...), &stats)
	require.Len(t, stats, 3)
	byQueue := map[string]store.QueueStats{}
	for _, raw := range stats {
		require.Contains(t, raw, "queue")
		require.Contains(t, raw, "counts")
		require.Contains(t, raw, "paused")
		b, _ := json.Marshal(raw)
		var s store.QueueStats
		require.NoError(t, json.Unmarshal(b, &s))
		require.Len(t, s.Counts, len(store.Statuses), "every status key for queue %s", s.Queue)
		for _, st := range store.Statuses {
			require.Contains(t, s.Counts, st)
		}
		byQueue[s.Queue] = s
	}
	require.Equal(t, store.QueueStats{Queue: "default", Paused: false,
		Counts:    map[string]int{"pending": 2, "processing": 0, "completed": 0, "failed": 0, "buried": 0},
		Unclaimed: []store.Unclaimed{{Handler: "queuety.noop", Kind: "job", Jobs: 2}}}, byQueue["default"])
	require.Equal(t, store.QueueStats{Queue: "emails", Paused: true,
		Counts: map[string]int{"pending": 0, "processing": 0, "completed": 0, "failed": 1, "buried": 1}}, byQueue["emails"])
	require.True(t, byQueue["idle"].Paused)

	require.Equal(t, "Queue 'emails' resumed.\n", runOK(t, on(dsn, "resume", "emails")...).stdout)
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_queue_states` WHERE queue = 'emails'"))
	r = runOK(t, on(dsn, "status")...)
	require.Regexp(t, `(?m)^emails\s+0\s+0\s+0\s+1\s+1\s*$`, r.stdout)
	require.Contains(t, r.stdout, "idle (paused)")

	for _, args := range [][]string{{"pause"}, {"resume"}, {"pause", "a", "b"}} {
		r := run(t, on(dsn, args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "one queue name")
	}
	r = run(t, on(dsn, "pause", strings.Repeat("q", 65))...)
	require.NotEqual(t, cli.ExitOK, r.code, r.String())
}

// jobList is the subset of `job list --json` the tests read.
type jobList []struct {
	ID      int64  `json:"id"`
	Queue   string `json:"queue"`
	Handler string `json:"handler"`
	Status  string `json:"status"`
}

func (l jobList) ids() []int64 {
	out := make([]int64, len(l))
	for i, j := range l {
		out[i] = j.ID
	}
	return out
}

func TestJobList(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	a := dispatch(t, dsn, "--queue", "x", "h1").ID
	b := dispatch(t, dsn, "--queue", "y", "h2").ID
	c := dispatch(t, dsn, "--queue", "x", "h2").ID
	runOK(t, on(dsn, "job", "bury", itoa(b))...)

	r := runOK(t, on(dsn, "job", "list")...)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 4, r.String())
	require.Equal(t, []string{"ID", "QUEUE", "HANDLER", "STATUS", "ATTEMPTS", "PRIORITY", "CREATED"}, strings.Fields(lines[0]))
	require.Regexp(t, `^3\s+x\s+h2\s+pending\s+0/3\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$`, lines[1])
	require.Regexp(t, `^2\s+y\s+h2\s+buried\s`, lines[2])
	require.Regexp(t, `^1\s+x\s+h1\s+pending\s`, lines[3])

	list := func(args ...string) jobList {
		t.Helper()
		var l jobList
		decodeJSON(t, runOK(t, on(dsn, append([]string{"job", "list", "--json"}, args...)...)...), &l)
		return l
	}
	require.Equal(t, []int64{c, b, a}, list().ids())
	require.Equal(t, []int64{c, a}, list("--queue", "x").ids())
	require.Equal(t, []int64{b}, list("--status", "buried").ids())
	require.Equal(t, []int64{c, b}, list("--handler", "h2").ids())
	require.Equal(t, []int64{c}, list("--queue", "x", "--handler", "h2", "--status", "pending").ids())
	require.Equal(t, []int64{c}, list("--limit", "1").ids())
	require.Empty(t, list("--queue", "nope"))
	require.Equal(t, "[]\n", runOK(t, on(dsn, "job", "list", "--json", "--queue", "nope")...).stdout)
	l := list("--status", "buried")
	require.Equal(t, "y", l[0].Queue)
	require.Equal(t, "h2", l[0].Handler)
	require.Equal(t, "buried", l[0].Status)

	r = run(t, on(dsn, "job", "list", "--status", "sleeping")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "sleeping")
	r = run(t, on(dsn, "job", "list", "--limit", "0")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--limit")
}

func TestJobInspect(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	id := dispatch(t, dsn, "--queue", "default", "--priority", "high", "--payload", `{"to":"a@b.c","n":1}`, "queuety.noop").ID
	drain(t, dsn)

	r := runOK(t, on(dsn, "job", "inspect", itoa(id))...)
	require.Contains(t, r.stdout, "Job #1  queuety.noop  (completed)\n")
	require.Contains(t, r.stdout, "queue default, priority 2, attempts 1/3")
	require.Contains(t, r.stdout, "payload: {")
	require.Contains(t, r.stdout, `"to": "a@b.c"`)
	require.Contains(t, r.stdout, "  log:\n")
	logPart := r.stdout[strings.Index(r.stdout, "  log:\n"):]
	require.Regexp(t, `^  log:\n\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+started\s+attempt 1\s+-\s*\n`+
		`\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+completed\s+attempt 1\s+-\s*\n$`, logPart)

	var v struct {
		ID          int64           `json:"id"`
		Handler     string          `json:"handler"`
		Status      string          `json:"status"`
		Priority    int             `json:"priority"`
		Attempts    int             `json:"attempts"`
		Payload     json.RawMessage `json:"payload"`
		CompletedAt *string         `json:"completed_at"`
		ReservedBy  *string         `json:"reserved_by"`
		Logs        []struct {
			Event   string `json:"event"`
			Attempt *int64 `json:"attempt"`
		} `json:"logs"`
	}
	r = runOK(t, on(dsn, "job", "inspect", "--json", itoa(id))...)
	decodeJSON(t, r, &v)
	require.Equal(t, id, v.ID)
	require.Equal(t, "queuety.noop", v.Handler)
	require.Equal(t, "completed", v.Status)
	require.Equal(t, 2, v.Priority)
	require.Equal(t, 1, v.Attempts)
	require.JSONEq(t, `{"to":"a@b.c","n":1}`, string(v.Payload))
	require.NotNil(t, v.CompletedAt)
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, *v.CompletedAt)
	require.Len(t, v.Logs, 2)
	require.Equal(t, "started", v.Logs[0].Event)
	require.Equal(t, "completed", v.Logs[1].Event)
	require.EqualValues(t, 1, *v.Logs[1].Attempt)

	// A job without logs: no log section, "logs" omitted from JSON.
	p := dispatch(t, dsn, "--payload", `{"k":"v"}`, "later").ID
	r = runOK(t, on(dsn, "job", "inspect", itoa(p))...)
	require.Contains(t, r.stdout, "(pending)")
	require.NotContains(t, r.stdout, "log:")
	r = runOK(t, on(dsn, "job", "inspect", "--json", itoa(p))...)
	require.NotContains(t, r.stdout, `"logs"`)

	r = run(t, on(dsn, "job", "inspect", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	require.Contains(t, r.stderr, "#999")
	require.Contains(t, r.stderr, "not found")

	for _, bad := range []string{"abc", "0", "1x", "01", "1.5", "99999999999999999999"} {
		r := run(t, on(dsn, "job", "inspect", bad)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "is not a job id", r.String())
	}
	r = run(t, on(dsn, "job", "inspect")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "one job id")
}

// A job buried at its runtime limit of 2 (the payload's
// __queuety_runtime.max_attempts; the row's column keeps the default 3)
// reads 2/2 in job inspect, job list (text and JSON) and job delete's
// confirmation, as on the dashboard: the limit a worker applies, not the
// column.
func TestJobAttemptsUseTheAppliedLimit(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	id := dispatch(t, dsn, "--payload", `{"message":"boom","__queuety_runtime":{"max_attempts":2,"backoff":[0]}}`, "queuety.fail").ID
	drain(t, dsn)
	db := openDB(t, dsn)
	require.Equal(t, 3, count(t, db, "SELECT max_attempts FROM `"+jobsTable+"` WHERE id = ?", id), "the column is the default")

	r := runOK(t, on(dsn, "job", "inspect", itoa(id))...)
	require.Contains(t, r.stdout, "(buried)")
	require.Contains(t, r.stdout, "attempts 2/2\n")
	var v struct {
		Attempts    int `json:"attempts"`
		MaxAttempts int `json:"max_attempts"`
	}
	decodeJSON(t, runOK(t, on(dsn, "job", "inspect", "--json", itoa(id))...), &v)
	require.Equal(t, 2, v.Attempts)
	require.Equal(t, 2, v.MaxAttempts)

	r = runOK(t, on(dsn, "job", "list", "--status", "buried")...)
	require.Regexp(t, `buried\s+2/2\s`, r.stdout)
	var list []struct {
		MaxAttempts int `json:"max_attempts"`
	}
	decodeJSON(t, runOK(t, on(dsn, "job", "list", "--json")...), &list)
	require.Len(t, list, 1)
	require.Equal(t, 2, list[0].MaxAttempts)

	r = runOK(t, on(dsn, "job", "delete", "--dry-run", itoa(id))...)
	require.Contains(t, r.stdout, "(buried) in queue default, attempts 2/2, created ", "the confirmation names the same limit")
}

func TestJobRetry(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatch(t, dsn, "--payload", `{"n":1}`, "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET attempts = 2, available_at = NOW() + INTERVAL 1 HOUR WHERE id = ?", id)
	runOK(t, on(dsn, "job", "bury", itoa(id))...)
	require.Equal(t, store.StatusBuried, jobRow(t, db, id).Status)

	r := runOK(t, on(dsn, "job", "retry", itoa(id))...)
	require.Equal(t, "Job #1 queued for retry.\n", r.stdout)
	j := jobRow(t, db, id)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 2, j.Attempts, "attempts are kept")
	require.False(t, j.ErrorMessage.Valid)
	require.False(t, j.ReservedAt.Valid)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE id = ? AND available_at <= NOW()", id))

	// Retrying a pending job again is fine.
	runOK(t, on(dsn, "job", "retry", itoa(id))...)

	r = run(t, on(dsn, "job", "retry", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "job", "retry", "abc")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

func TestJobRetryBuried(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	var ids []int64
	for i, q := range []string{"a", "a", "b"} {
		ids = append(ids, dispatch(t, dsn, "--queue", q, "--payload", `{"i":`+itoa(int64(i))+`}`, "hx").ID)
	}
	keep := dispatch(t, dsn, "--queue", "a", "hx").ID // pending, untouched
	for _, id := range ids {
		runOK(t, on(dsn, "job", "bury", itoa(id))...)
	}

	r := runOK(t, on(dsn, "job", "retry-buried", "--queue", "a", "--yes")...)
	require.Equal(t, "Retried 2 buried jobs.\n", r.stdout)
	require.Equal(t, store.StatusPending, jobRow(t, db, ids[0]).Status)
	require.Equal(t, store.StatusPending, jobRow(t, db, ids[1]).Status)
	require.Equal(t, store.StatusBuried, jobRow(t, db, ids[2]).Status)
	require.False(t, jobRow(t, db, ids[0]).ErrorMessage.Valid)

	var n map[string]int
	decodeJSON(t, runOK(t, on(dsn, "job", "retry-buried", "--json", "--yes")...), &n)
	require.Equal(t, map[string]int{"retried": 1}, n)
	require.Equal(t, store.StatusPending, jobRow(t, db, ids[2]).Status)
	require.Equal(t, store.StatusPending, jobRow(t, db, keep).Status)

	require.Equal(t, "Retried 0 buried jobs.\n", runOK(t, on(dsn, "job", "retry-buried")...).stdout)
}

func TestJobBury(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	a := dispatch(t, dsn, "--payload", `{"n":1}`, "hx").ID
	b := dispatch(t, dsn, "--payload", `{"n":2}`, "hx").ID

	r := runOK(t, on(dsn, "job", "bury", itoa(a))...)
	require.Equal(t, "Job #1 buried.\n", r.stdout)
	j := jobRow(t, db, a)
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, "Manually buried via CLI.", j.ErrorMessage.String)
	require.True(t, j.FailedAt.Valid)

	runOK(t, on(dsn, "job", "bury", "--message", "bad data", itoa(b))...)
	require.Equal(t, "bad data", jobRow(t, db, b).ErrorMessage.String)
	// An empty message falls back to the default.
	runOK(t, on(dsn, "job", "bury", "--message", "", itoa(b))...)
	require.Equal(t, "Manually buried via CLI.", jobRow(t, db, b).ErrorMessage.String)

	r = run(t, on(dsn, "job", "bury", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "job", "bury")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

func TestJobDeleteKeepsLogs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatch(t, dsn, "--payload", `{"n":1}`, "queuety.noop").ID
	other := dispatch(t, dsn, "--payload", `{"n":2}`, "queuety.noop").ID
	drain(t, dsn)
	require.Equal(t, []string{"started", "completed"}, logEvents(t, db, id))

	r := runOK(t, on(dsn, "job", "delete", "--yes", itoa(id))...)
	require.Equal(t, "Job #1 deleted.\n", r.stdout)
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE id = ?", id))
	require.Equal(t, []string{"started", "completed"}, logEvents(t, db, id), "logs stay")
	require.Equal(t, store.StatusCompleted, jobRow(t, db, other).Status)

	r = run(t, on(dsn, "job", "delete", "--yes", itoa(id))...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "job", "inspect", itoa(id))...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
}

func TestPurgeOlderThan(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	var ids []int64
	for i := range 4 {
		ids = append(ids, dispatch(t, dsn, "--payload", `{"i":`+itoa(int64(i))+`}`, "hx").ID)
	}
	// 1, 2: completed 10 days ago; 3: completed 2 days ago; 4: buried 10 days ago.
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'completed', completed_at = NOW() - INTERVAL 10 DAY WHERE id IN (?, ?)", ids[0], ids[1])
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'completed', completed_at = NOW() - INTERVAL 2 DAY WHERE id = ?", ids[2])
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'buried', failed_at = NOW() - INTERVAL 10 DAY, completed_at = NOW() - INTERVAL 10 DAY WHERE id = ?", ids[3])

	r := runOK(t, on(dsn, "purge", "--yes")...) // default: 7 days
	require.Equal(t, "Purged 2 completed jobs.\n", r.stdout)
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`"))

	var n struct {
		Purged int            `json:"purged"`
		Kinds  map[string]int `json:"kinds"`
	}
	decodeJSON(t, runOK(t, on(dsn, "purge", "--older-than", "3", "--json")...), &n)
	require.Equal(t, 0, n.Purged)
	require.Equal(t, map[string]int{"completed": 0}, n.Kinds)
	decodeJSON(t, runOK(t, on(dsn, "purge", "--older-than", "1", "--json", "--yes")...), &n)
	require.Equal(t, 1, n.Purged)
	require.Equal(t, store.StatusBuried, jobRow(t, db, ids[3]).Status, "only completed jobs are purged")

	// Other kinds, named together; a log row of the buried job stays until
	// its age is past too.
	exec1(t, db, "INSERT INTO `"+logsTable+"` (job_id, handler, event, created_at) VALUES (?, 'hx', 'buried', NOW() - INTERVAL 10 DAY), (?, 'hx', 'buried', NOW() - INTERVAL 1 DAY)", ids[3], ids[3])
	r = runOK(t, on(dsn, "purge", "--kind", "buried,logs", "--older-than", "5", "--dry-run")...)
	require.Equal(t, "Would purge 1 buried jobs, 1 log rows older than 5 days.\n", r.stdout)
	r = runOK(t, on(dsn, "purge", "--kind", "logs, buried", "--older-than", "5", "--yes")...)
	require.Equal(t, "Purged 1 buried jobs, 1 log rows.\n", r.stdout)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"`"))
	require.Equal(t, 0, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`"))
	r = run(t, on(dsn, "purge", "--kind", "everything")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--kind")

	r = run(t, on(dsn, "purge", "--older-than", "-1")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--older-than")
}

func TestRecoverStale(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	retry := dispatch(t, dsn, "--payload", `{"n":1}`, "gone.worker").ID
	bury := dispatch(t, dsn, "--payload", `{"n":2}`, "gone.worker").ID
	fresh := dispatch(t, dsn, "--payload", `{"n":3}`, "gone.worker").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', attempts = 1, reserved_by = 'dead', reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", retry)
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', attempts = 3, reserved_by = 'dead', reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", bury)
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', attempts = 1, reserved_by = 'alive', reserved_at = NOW() + INTERVAL 1 HOUR WHERE id = ?", fresh)

	// An hour old is not stale under a 2h timeout.
	r := runOK(t, on(dsn, "recover", "--stale-timeout", "2h")...)
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout)
	require.Equal(t, store.StatusProcessing, jobRow(t, db, retry).Status)

	var res map[string]int
	decodeJSON(t, runOK(t, on(dsn, "recover", "--stale-timeout", "1s", "--json")...), &res)
	require.Equal(t, map[string]int{"retried": 1, "buried": 1}, res)

	j := jobRow(t, db, retry)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 1, j.Attempts, "attempts stay")
	require.False(t, j.ReservedAt.Valid)
	require.Equal(t, []string{"retried"}, logEvents(t, db, retry))

	j = jobRow(t, db, bury)
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, "Stale: worker died without completing.", j.ErrorMessage.String)
	require.Equal(t, []string{"buried"}, logEvents(t, db, bury))

	require.Equal(t, store.StatusProcessing, jobRow(t, db, fresh).Status)

	r = runOK(t, on(dsn, "recover", "--stale-timeout", "1s")...)
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout)

	r = run(t, on(dsn, "recover", "--stale-timeout", "500ms")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "stale timeout")
}
