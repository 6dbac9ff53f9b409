package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

func TestMigrateTextThenUpToDate(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "migrate")...)
	var created []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if name, ok := strings.CutPrefix(line, "created table "); ok {
			created = append(created, name)
		}
	}
	require.Len(t, created, len(store.TableSuffixes())+len(store.OwnTableSuffixes()), r.String())
	require.Equal(t, "wp_queuety_jobs", created[0])
	require.Contains(t, created, "wp_queuety_logs")
	require.Contains(t, created, "wp_queuety_queue_states")
	require.Contains(t, r.stdout, "added column wp_queuety_jobs.reserved_by\n")
	require.Contains(t, r.stdout, "added index wp_queuety_jobs.")

	db := openDB(t, dsn)
	require.Equal(t, len(store.TableSuffixes())+len(store.OwnTableSuffixes()), count(t, db,
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'wp\\_queuety\\_%'"))

	r = runOK(t, on(dsn, "migrate")...)
	require.Equal(t, "Schema up to date.\n", r.stdout)
}

func TestMigrateJSON(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	var rep store.MigrateReport
	decodeJSON(t, runOK(t, on(dsn, "migrate", "--json")...), &rep)
	require.Len(t, rep.CreatedTables, len(store.TableSuffixes())+len(store.OwnTableSuffixes()))
	require.Contains(t, rep.CreatedTables, "wp_queuety_jobs")
	require.Equal(t, []string{"wp_queuety_jobs.reserved_by", "wp_queuety_jobs.session_id", "wp_queuety_jobs.worker_session", "wp_queuety_jobs.session_pending", "wp_queuety_jobs.session_processing"}, rep.AddedColumns)
	require.NotEmpty(t, rep.AddedIndexes)

	r := runOK(t, on(dsn, "migrate", "--json")...)
	var again map[string][]string
	decodeJSON(t, r, &again)
	require.Contains(t, again, "created_tables", r.String())
	for k, v := range again {
		require.Empty(t, v, "second migrate reports %s", k)
	}
}

// Before `migrate`, `work` refuses to start and says what to run; the other
// commands fail (nonzero) rather than pretend all is well.
func TestCommandsBeforeMigrate(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)

	r := run(t, on(dsn, "work", "--concurrency", "2")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "queuety migrate", r.String())
	require.Contains(t, r.stderr, "wp_queuety_jobs", r.String())

	for _, args := range [][]string{
		{"status"},
		{"dispatch", "queuety.noop"},
		{"recover"},
		{"job", "inspect", "1"},
	} {
		r := run(t, on(dsn, args...)...)
		require.NotEqual(t, cli.ExitOK, r.code, r.String())
		require.Contains(t, r.stderr, "wp_queuety_jobs", r.String())
	}
}

// A database error (here: no tables) is a failed command, exit 1, not a
// usage error: `job list` wraps every error of client.Jobs as usageError.
func TestJobListDatabaseErrorIsNotUsage(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := run(t, on(dsn, "job", "list")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
}

// The payload is stored byte for byte as PHP's json_encode writes it
// (spec §2.1): escaped slashes, \u escapes for non-ASCII, key order kept.
func TestDispatchStoresPayloadAsPHP(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	const in = `{"url":"http://x/y","n":"Zoë","f":1.5}`
	const want = `{"url":"http:\/\/x\/y","n":"Zo\u00eb","f":1.5}`

	r := runOK(t, on(dsn, "dispatch", "--payload", in, "queuety.noop")...)
	require.Equal(t, "Dispatched job #1\n", r.stdout)
	j := jobRow(t, db, 1)
	require.Equal(t, want, j.Payload)
	require.False(t, j.PayloadHash.Valid, "payload_hash is set only for unique jobs")
	require.Equal(t, "queuety.noop", j.Handler)
	require.Equal(t, "default", j.Queue)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 0, j.Priority)
	require.Equal(t, 3, j.MaxAttempts)
	require.Equal(t, 0, j.Attempts)
	require.False(t, j.DependsOn.Valid)

	d := dispatch(t, dsn, "--unique", "--payload", in, "queuety.noop")
	j = jobRow(t, db, d.ID)
	require.Equal(t, want, j.Payload)
	sum := sha256.Sum256([]byte(want))
	require.Equal(t, hex.EncodeToString(sum[:]), j.PayloadHash.String)

	// No --payload: an empty PHP array, stored as [] (spec §2.2).
	d = dispatch(t, dsn, "queuety.noop")
	require.Equal(t, "[]", jobRow(t, db, d.ID).Payload)
	// {} is an empty PHP array too.
	d = dispatch(t, dsn, "--payload", "{}", "queuety.noop")
	require.Equal(t, "[]", jobRow(t, db, d.ID).Payload)
}

func TestDispatchFlags(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)

	for _, tc := range []struct {
		flag string
		want int
	}{
		{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3},
		{"low", 0}, {"normal", 1}, {"high", 2}, {"urgent", 3},
	} {
		d := dispatch(t, dsn, "--priority", tc.flag, "--payload", `{"p":"`+tc.flag+`"}`, "queuety.noop")
		require.Equal(t, tc.want, jobRow(t, db, d.ID).Priority, "--priority %s", tc.flag)
	}

	d := dispatch(t, dsn, "--queue", "emails", "--delay", "90s", "--max-attempts", "7", "--payload", `{"to":"a@b.c"}`, "send_email")
	require.False(t, d.Existing)
	j := jobRow(t, db, d.ID)
	require.Equal(t, "emails", j.Queue)
	require.Equal(t, "send_email", j.Handler)
	require.Equal(t, 7, j.MaxAttempts)
	delay := j.AvailableAt.Sub(j.CreatedAt)
	require.True(t, delay >= 89*time.Second && delay <= 91*time.Second, "available_at %s is not created_at %s + 90s", j.AvailableAt, j.CreatedAt)

	after := dispatch(t, dsn, "--after", itoa(d.ID), "queuety.noop")
	j = jobRow(t, db, after.ID)
	require.True(t, j.DependsOn.Valid)
	require.Equal(t, d.ID, j.DependsOn.Int64)

	// --delay keeps whole seconds, as PHP.
	d = dispatch(t, dsn, "--delay", "1500ms", "--payload", `{"d":1}`, "queuety.noop")
	j = jobRow(t, db, d.ID)
	require.LessOrEqual(t, j.AvailableAt.Sub(j.CreatedAt), 2*time.Second)
}

func TestDispatchUnique(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	args := on(dsn, "dispatch", "--unique", "--payload", `{"report":"daily"}`, "report")

	r1 := runOK(t, args...)
	require.Equal(t, "Dispatched job #1\n", r1.stdout)
	r2 := runOK(t, args...)
	require.Equal(t, "Job #1 already pending (unique).\n", r2.stdout)
	require.Contains(t, r2.stdout, "already pending")

	d := dispatch(t, dsn, "--unique", "--payload", `{"report":"daily"}`, "report")
	require.Equal(t, dispatched{ID: 1, Existing: true}, d)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`"))

	// Another payload or handler is another job.
	require.Equal(t, int64(2), dispatch(t, dsn, "--unique", "--payload", `{"report":"weekly"}`, "report").ID)
	require.Equal(t, int64(3), dispatch(t, dsn, "--unique", "--payload", `{"report":"daily"}`, "report2").ID)
	// Without --unique the duplicate is inserted.
	require.Equal(t, int64(4), dispatch(t, dsn, "--payload", `{"report":"daily"}`, "report").ID)

	// Once the job is no longer pending or processing, --unique inserts again.
	runOK(t, on(dsn, "job", "bury", "1")...)
	d = dispatch(t, dsn, "--unique", "--payload", `{"report":"daily"}`, "report")
	require.False(t, d.Existing)
	require.Equal(t, int64(5), d.ID)
}

// Bad input is a usage error (exit 2) whose message names the flag, and
// nothing is inserted.
func TestDispatchBadInputs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"payload list", []string{"--payload", `[1,2]`, "hx"}, "--payload"},
		{"payload string", []string{"--payload", `"x"`, "hx"}, "--payload"},
		{"payload number", []string{"--payload", `42`, "hx"}, "--payload"},
		{"payload invalid JSON", []string{"--payload", `{"a":`, "hx"}, "--payload"},
		{"payload trailing garbage", []string{"--payload", `{"a":1} x`, "hx"}, "--payload"},
		{"priority 7", []string{"--priority", "7", "hx"}, "--priority"},
		{"priority -1", []string{"--priority", "-1", "hx"}, "--priority"},
		{"priority name", []string{"--priority", "critical", "hx"}, "--priority"},
		{"missing handler", nil, "handler"},
		{"two handlers", []string{"a", "b"}, "handler"},
		{"empty handler", []string{""}, "handler"},
		{"unknown flag", []string{"--bogus", "hx"}, "bogus"},
		{"delay not a duration", []string{"--delay", "soon", "hx"}, "delay"},
		{"max-attempts 0", []string{"--max-attempts", "0", "hx"}, "--max-attempts"},
		{"max-attempts 256", []string{"--max-attempts", "256", "hx"}, "--max-attempts"},
		{"negative delay", []string{"--delay", "-5s", "hx"}, "--delay"},
		{"after 0", []string{"--after", "0", "hx"}, "--after"},
		{"empty queue", []string{"--queue", "", "hx"}, "--queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, on(dsn, append([]string{"dispatch"}, tc.args...)...)...)
			require.Equal(t, cli.ExitUsage, r.code, r.String())
			require.Contains(t, r.stderr, tc.want, r.String())
		})
	}
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`"))
}

// Every urfave/cli command gets a "help, h" subcommand unless
// HideHelpCommand is set, so `dispatch help` and `dispatch h` print help
// (exit 0, nothing inserted) instead of dispatching a job with that handler,
// and `pause h` prints help instead of pausing queue "h".
func TestHandlerAndQueueNamedHelp(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	for _, name := range []string{"h", "help"} {
		r := run(t, on(dsn, "dispatch", "--json", name)...)
		require.Equal(t, cli.ExitOK, r.code, r.String())
		require.NotContains(t, r.stdout, "USAGE:", r.String())
		require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE handler = ?", name), r.String())

		r = run(t, on(dsn, "pause", name)...)
		require.Equal(t, "Queue '"+name+"' paused.\n", r.stdout, r.String())
	}
	// --help still shows the help.
	r := runOK(t, on(dsn, "dispatch", "--help")...)
	require.Contains(t, r.stdout, "USAGE:")
}

// The documented form puts flags after the handler (queuety --help:
// `queuety dispatch queuety.noop --payload '{"n":1}'`; dispatch --help:
// `queuety dispatch report --delay 60 --unique --json`). urfave/cli v2 stops
// parsing flags at the first argument, so today these fail with "dispatch
// takes one handler name".
func TestDispatchFlagsAfterHandler(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)

	r := run(t, on(dsn, "dispatch", "queuety.noop", "--payload", `{"n":1}`)...)
	require.Equal(t, cli.ExitOK, r.code, r.String())
	require.Equal(t, `{"n":1}`, jobRow(t, db, 1).Payload)

	r = run(t, on(dsn, "dispatch", "report", "--delay", "60s", "--unique", "--json")...)
	require.Equal(t, cli.ExitOK, r.code, r.String())
	require.Contains(t, r.stdout, `"id"`)

	id := dispatch(t, dsn, "--payload", `{"n":3}`, "queuety.noop").ID
	r = run(t, on(dsn, "job", "bury", itoa(id), "--message", "nope")...)
	require.Equal(t, cli.ExitOK, r.code, r.String())
	require.Equal(t, "nope", jobRow(t, db, id).ErrorMessage.String)
}

func TestDispatchConcurrencyGroupAndCost(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	runOK(t, on(dsn, "dispatch", "api_call", "--concurrency-group", "stripe", "--concurrency-limit", "2", "--cost-units", "5")...)
	var got struct {
		Group string `db:"concurrency_group"`
		Limit int    `db:"concurrency_limit"`
		Cost  int    `db:"cost_units"`
	}
	require.NoError(t, openDB(t, dsn).Get(&got, "SELECT concurrency_group, concurrency_limit, cost_units FROM "+jobsTable))
	require.Equal(t, "stripe", got.Group)
	require.Equal(t, 2, got.Limit)
	require.Equal(t, 5, got.Cost)
	for _, args := range [][]string{
		{"--concurrency-group", "stripe"},
		{"--cost-units", "0"},
	} {
		r := run(t, on(dsn, append([]string{"dispatch", "api_call"}, args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, args[0], r.String())
	}
}

// The names Queuety keeps for its own jobs are refused as a usage error
// naming the reservation, and nothing is inserted (the Go registry
// already refuses to register them).
func TestDispatchRefusesReservedHandlerNames(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	for _, h := range []string{"__queuety_cron_my_hook", "__queuety_delay", "__queuety_state_machine_action"} {
		r := run(t, on(dsn, "dispatch", h)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "reserved", r.String())
		r = run(t, on(dsn, "dispatch", "--queue", "q", h)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
	}
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`"))
}
