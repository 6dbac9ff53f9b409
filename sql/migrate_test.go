package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pluginDDL returns schema/queuety.sql split into its CREATE TABLE
// statements by suffix, raw, parsed independently of parseBlocks.
func pluginDDL(t *testing.T) (order []string, ddl map[string]string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("schema", "queuety.sql"))
	require.NoError(t, err)
	header := regexp.MustCompile(`(?m)^-- table: (\w+)\n`)
	locs := header.FindAllStringSubmatchIndex(string(src), -1)
	require.Len(t, locs, 16)
	ddl = map[string]string{}
	for i, l := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := string(src[l[2]:l[3]])
		body := strings.TrimSuffix(strings.TrimSpace(string(src[l[1]:end])), ";")
		require.True(t, strings.HasPrefix(body, "CREATE TABLE IF NOT EXISTS {"+name+"} ("), name)
		order = append(order, name)
		ddl[name] = body
	}
	return order, ddl
}

// installPlugin creates the 16 tables exactly as the plugin's Schema.php
// does, with nothing of ours.
func (e *testEnv) installPlugin() {
	e.t.Helper()
	order, ddl := pluginDDL(e.t)
	for _, s := range order {
		q := strings.ReplaceAll(ddl[s], "{"+s+"}", "`"+e.tables[s]+"`")
		_, err := e.db.ExecContext(e.ctx, q)
		require.NoError(e.t, err, s)
	}
}

func (e *testEnv) showCreate(table string) string {
	e.t.Helper()
	var name, ddl string
	require.NoError(e.t, e.db.QueryRowContext(e.ctx, "SHOW CREATE TABLE `"+table+"`").Scan(&name, &ddl))
	return ddl
}

// dump reads every row of a table as strings (NULL as "<nil>"), by id.
func (e *testEnv) dump(table, orderBy string) []map[string]string {
	e.t.Helper()
	return e.dumpQuery("SELECT * FROM `" + table + "` ORDER BY " + orderBy)
}

// dumpQuery reads the rows of a query as strings (NULL as "<nil>").
func (e *testEnv) dumpQuery(q string, args ...any) []map[string]string {
	e.t.Helper()
	rows, err := e.db.QueryxContext(e.ctx, q, args...)
	require.NoError(e.t, err)
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		m := map[string]any{}
		require.NoError(e.t, rows.MapScan(m))
		r := map[string]string{}
		for k, v := range m {
			switch v := v.(type) {
			case nil:
				r[k] = "<nil>"
			case []byte:
				r[k] = string(v)
			default:
				r[k] = fmt.Sprint(v)
			}
		}
		out = append(out, r)
	}
	require.NoError(e.t, rows.Err())
	return out
}

func (e *testEnv) columns(table string) []string {
	e.t.Helper()
	var cols []string
	require.NoError(e.t, e.db.SelectContext(e.ctx, &cols,
		"SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", table))
	return cols
}

// Our additive extensions to the plugin's tables, in extensions.sql order.
var (
	ourColumns = []string{"wp_queuety_jobs.reserved_by", "wp_queuety_jobs.session_id", "wp_queuety_jobs.worker_session", "wp_queuety_jobs.session_pending", "wp_queuety_jobs.session_processing"}
	ourIndexes = []string{"wp_queuety_jobs.idx_qgo_claim", "wp_queuety_jobs.idx_qgo_session", "wp_queuety_jobs.idx_qgo_session_processing"}
)

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	rep, err := e.s.Migrate(e.ctx)
	require.NoError(t, err)
	var want []string
	for _, s := range append(TableSuffixes(), OwnTableSuffixes()...) {
		want = append(want, "wp_queuety_"+s)
	}
	require.Equal(t, want, rep.CreatedTables)
	require.Equal(t, ourColumns, rep.AddedColumns)
	require.Equal(t, ourIndexes, rep.AddedIndexes)
	require.True(t, rep.Changed())

	require.Equal(t, 16+len(OwnTableSuffixes()), e.count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"))
	for _, s := range TableSuffixes() {
		ddl := e.showCreate(e.tables[s])
		require.Contains(t, ddl, "ENGINE=InnoDB", s)
		require.Contains(t, ddl, "CHARSET=utf8mb4", s)
		require.Contains(t, ddl, "COLLATE=utf8mb4_unicode_ci", s)
	}
	jobs := e.showCreate(e.tables["jobs"])
	require.Contains(t, jobs, "`reserved_by` varchar(64) DEFAULT NULL")
	require.Contains(t, jobs, "KEY `idx_qgo_claim` (`queue`,`status`,`priority` DESC,`id`,`available_at`)")
	// Queuety's claim forces this index by name: it must exist as-is.
	require.Contains(t, jobs, "KEY `idx_queue_claim` (`queue`,`status`,`priority`,`id`,`available_at`)")

	rep, err = e.s.Migrate(e.ctx)
	require.NoError(t, err)
	require.False(t, rep.Changed(), "second run: %+v", rep)
	require.Empty(t, rep.CreatedTables)
	require.Empty(t, rep.AddedColumns)
	require.Empty(t, rep.AddedIndexes)
	require.NoError(t, e.s.CheckSchema(e.ctx))
}

func TestMigrateCreatesOnlyMissingTables(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("DROP TABLE {webhooks}")
	e.exec("DROP TABLE {chunks}")
	rep, err := e.s.Migrate(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"wp_queuety_webhooks", "wp_queuety_chunks"}, rep.CreatedTables)
	require.Empty(t, rep.AddedColumns)
	require.Empty(t, rep.AddedIndexes)
}

// TestMigrateOverPluginInstall runs Migrate over tables created by the
// plugin's own DDL, holding rows, and checks it only adds our two extensions.
func TestMigrateOverPluginInstall(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	e.installPlugin()

	e.exec(`INSERT INTO {jobs} (queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, available_at,
		reserved_at, error_message, concurrency_group, concurrency_limit, cost_units, heartbeat_data, created_at) VALUES
		('default', 'flaky', '{"why":"test"}', NULL, 0, 'pending', 1, 2, '2026-11-30 02:45:09', NULL, NULL, NULL, NULL, 1, NULL, '2026-11-30 02:44:09'),
		('mail', 'App\\Jobs\\Send', '{"to":"a@b.c"}', REPEAT('a', 64), 3, 'buried', 2, 2, '2026-11-30 02:44:09', '2026-11-30 02:44:09', 'boom: test', 'g', 2, 5, '{"processed":50}', '2026-11-30 02:44:09')`)
	e.exec(`INSERT INTO {logs} (job_id, handler, queue, event, attempt, duration_ms, error_message, error_class, context, created_at) VALUES
		(1, 'flaky', 'default', 'started', 1, NULL, NULL, NULL, NULL, '2026-11-30 02:44:09'),
		(1, 'flaky', 'default', 'failed', 1, 0, 'boom: test', 'RuntimeException', NULL, '2026-11-30 02:44:09'),
		(NULL, '_worker', 'default', 'started', NULL, NULL, NULL, NULL, '{"message":"Queue ''default'' is paused, skipping."}', '2026-11-30 02:44:10')`)
	e.exec("INSERT INTO {queue_states} (queue, paused, paused_at) VALUES ('mail', 1, '2026-11-30 02:44:09')")
	e.exec(`INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{}', 2)`)
	e.exec(`INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run) VALUES ('tick', '[]', 'default', '60', 'interval', '2026-11-30 02:45:00')`)

	before := map[string]string{}
	for _, s := range TableSuffixes() {
		before[s] = e.showCreate(e.tables[s])
	}
	rowsBefore := map[string][]map[string]string{}
	for _, s := range []string{"jobs", "logs", "queue_states", "workflows", "schedules"} {
		rowsBefore[s] = e.dump(e.tables[s], "1")
		require.NotEmpty(t, rowsBefore[s], s)
	}

	// Not ours yet: work must refuse to start.
	err := e.s.CheckSchema(e.ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "`queuety migrate`")

	rep, err := e.s.Migrate(e.ctx)
	require.NoError(t, err)
	var own []string
	for _, s := range OwnTableSuffixes() {
		own = append(own, "wp_queuety_"+s)
	}
	require.Equal(t, own, rep.CreatedTables, "only queuety-go's own tables are created")
	require.Equal(t, ourColumns, rep.AddedColumns)
	require.Equal(t, ourIndexes, rep.AddedIndexes)

	for _, s := range TableSuffixes() {
		after := e.showCreate(e.tables[s])
		if s != "jobs" {
			require.Equal(t, before[s], after, s)
			continue
		}
		// Compare line by line; a comma moves when a line is appended.
		norm := func(ddl string) []string {
			lines := strings.Split(ddl, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimSuffix(strings.TrimSpace(l), ",")
			}
			return lines
		}
		b, a := norm(before[s]), norm(after)
		var added []string
		var kept []string
		for _, l := range a {
			if contains(b, l) {
				kept = append(kept, l)
			} else {
				added = append(added, l)
			}
		}
		require.Equal(t, b, kept, "every original column and index of jobs, in order, unchanged")
		require.Equal(t, []string{
			"`reserved_by` varchar(64) DEFAULT NULL",
			"`session_id` varchar(255) DEFAULT NULL",
			"`worker_session` text DEFAULT NULL",
			"`session_pending` varchar(255) GENERATED ALWAYS AS (if(`status` = 'pending',`session_id`,NULL)) VIRTUAL",
			"`session_processing` varchar(255) GENERATED ALWAYS AS (if(`status` = 'processing',`session_id`,NULL)) VIRTUAL",
			"KEY `idx_qgo_claim` (`queue`,`status`,`priority` DESC,`id`,`available_at`)",
			"KEY `idx_qgo_session` (`session_pending`)",
			"KEY `idx_qgo_session_processing` (`session_processing`)",
		}, added)
	}

	for s, want := range rowsBefore {
		got := e.dump(e.tables[s], "1")
		if s == "jobs" {
			for _, r := range got {
				for _, col := range []string{"reserved_by", "session_id", "worker_session", "session_pending", "session_processing"} {
					require.Equal(t, "<nil>", r[col], col)
					delete(r, col)
				}
			}
		}
		require.Equal(t, want, got, s)
	}

	rep, err = e.s.Migrate(e.ctx)
	require.NoError(t, err)
	require.False(t, rep.Changed(), "second run: %+v", rep)
	require.NoError(t, e.s.CheckSchema(e.ctx))

	// The plugin's rows are usable by the store as-is.
	j := e.job(1)
	require.Equal(t, "flaky", j.Handler)
	require.Equal(t, 1, j.Attempts)
}

// TestMigrateColumnsMatchPluginRows checks the jobs and logs columns against
// the rows the real plugin wrote (fixtures/queuety-plugin), plus our
// reserved_by.
func TestMigrateColumnsMatchPluginRows(t *testing.T) {
	t.Parallel()
	const fixture = "../testdata/queuety-plugin"
	entries, err := os.ReadDir(fixture)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "fixture dir %s is present but empty", fixture)
	raw, err := os.ReadFile(filepath.Join(fixture, "job_retry_then_bury.json"))
	require.NoError(t, err)

	// Keys in the order the plugin's SELECT * returned them.
	var doc struct {
		Snapshots []struct {
			Jobs []json.RawMessage `json:"jobs"`
			Logs []json.RawMessage `json:"logs"`
		} `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Snapshots)
	keysOf := func(m json.RawMessage) []string {
		dec := json.NewDecoder(strings.NewReader(string(m)))
		_, err := dec.Token() // {
		require.NoError(t, err)
		var keys []string
		for dec.More() {
			tok, err := dec.Token()
			require.NoError(t, err)
			keys = append(keys, tok.(string))
			var skip json.RawMessage
			require.NoError(t, dec.Decode(&skip))
		}
		return keys
	}
	var jobKeys, logKeys []string
	for _, sn := range doc.Snapshots {
		for _, j := range sn.Jobs {
			k := keysOf(j)
			if jobKeys == nil {
				jobKeys = k
			}
			require.Equal(t, jobKeys, k)
		}
		for _, l := range sn.Logs {
			k := keysOf(l)
			if logKeys == nil {
				logKeys = k
			}
			require.Equal(t, logKeys, k)
		}
	}
	require.NotEmpty(t, jobKeys, "no job rows in the fixture")
	require.NotEmpty(t, logKeys, "no log rows in the fixture")

	e := newEnv(t)
	require.Equal(t, append(jobKeys, "reserved_by", "session_id", "worker_session", "session_pending", "session_processing"), e.columns(e.tables["jobs"]))
	require.Equal(t, logKeys, e.columns(e.tables["logs"]))

	// And every column maps onto JobRow / LogRow.
	id := e.dispatch(InsertJob{})
	var j JobRow
	require.NoError(t, e.db.GetContext(e.ctx, &j, render("SELECT * FROM {jobs} WHERE id = ?", e.tables), id))
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(id, EventStarted, 1)}))
	var l LogRow
	require.NoError(t, e.db.GetContext(e.ctx, &l, render("SELECT * FROM {logs} WHERE job_id = ?", e.tables), id))
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	t.Run("empty database", func(t *testing.T) {
		t.Parallel()
		e := newEmptyEnv(t)
		err := e.s.CheckSchema(e.ctx)
		require.Error(t, err)
		require.Contains(t, err.Error(), "wp_queuety_jobs does not exist")
		require.Contains(t, err.Error(), "`queuety migrate`")
	})
	t.Run("missing logs table", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.exec("DROP TABLE {logs}")
		err := e.s.CheckSchema(e.ctx)
		require.Error(t, err)
		require.Contains(t, err.Error(), "wp_queuety_logs does not exist")
		require.Contains(t, err.Error(), "`queuety migrate`")
	})
	t.Run("plugin tables without extensions", func(t *testing.T) {
		t.Parallel()
		e := newEmptyEnv(t)
		e.installPlugin()
		err := e.s.CheckSchema(e.ctx)
		require.Error(t, err)
		require.Contains(t, err.Error(), "column wp_queuety_jobs.reserved_by is missing")
		require.Contains(t, err.Error(), "`queuety migrate`")
	})
	t.Run("missing claim index", func(t *testing.T) {
		// The claim names idx_qgo_claim in FORCE INDEX, so without it every
		// claim fails: work must refuse to start like for reserved_by.
		t.Parallel()
		e := newEnv(t)
		e.exec("ALTER TABLE {jobs} DROP INDEX idx_qgo_claim")
		c, err := e.s.BeginClaim(e.ctx)
		require.NoError(t, err)
		_, err = c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 1})
		require.ErrorContains(t, err, "idx_qgo_claim")
		require.NoError(t, c.Rollback())
		err = e.s.CheckSchema(e.ctx)
		require.Error(t, err, "CheckSchema must notice the missing idx_qgo_claim extension")
		require.Contains(t, err.Error(), "`queuety migrate`")
	})
	t.Run("migrated", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		require.NoError(t, e.s.CheckSchema(e.ctx))
	})
}
