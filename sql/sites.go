package store

import (
	"cmp"
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

//go:embed sites.sql
var sitesSQL string

// Names of sites.sql's statements.
const (
	qAnyDueSite       = "any-due-site"
	qWebhooksSite     = "webhooks-site"
	qBeatWorkers      = "heartbeat-workers"
	qBeatJoin         = "heartbeat-workers-join"
	qBeatSet          = "heartbeat-workers-set"
	qRegistered       = "registered-worker"
	qSchedulesDueSite = "schedules-due-site"
	qOpenJobsSite     = "open-jobs-site"
	qExistsSite       = "exists-site"
	qStaleSite        = "stale-site"
	qSignalsDueSite   = "signals-due-site"
	qNetworkBlogs     = "network-blogs"
	qTablesPresent    = "tables-present"
	qQuestions        = "server-questions"
	qConnections      = "server-connections"
	qWriteCounters    = "server-write-counters"
	qNoiseTable       = "bench-noise-table"
	qNoiseRow         = "bench-noise-row"
)

// sitesQueries is sites.sql parsed once; its {jobs} placeholder is
// rendered per site.
var sitesQueries = func() map[string]string {
	blocks, err := parseBlocks(sitesSQL, "name")
	if err != nil {
		panic("sites.sql: " + err.Error())
	}
	m := make(map[string]string, len(blocks))
	for _, b := range blocks {
		m[b.name] = b.sql
	}
	return m
}()

// DueLook is one site's part of a batched idle look: its Store, the
// queues it serves, and its database when the look runs on a connection
// to another database of the server (then the jobs table is named with it).
type DueLook struct {
	Store    *Store
	Queues   []string
	Database string
}

// AnyDueAcross answers AnyDue for many sites whose stores share one
// database handle, in one statement (UNION ALL of each site's any-due):
// due[i] tells whether looks[i] has a pending, due job. Sites without
// queues are not asked.
func AnyDueAcross(ctx context.Context, db *sqlx.DB, looks []DueLook) ([]bool, error) {
	due := make([]bool, len(looks))
	q, args, err := anyDueStatement(looks)
	if err != nil || q == "" {
		return due, err
	}
	rows, err := db.QueryContext(ctx, db.Rebind(q), args...)
	if err := readSites(rows, err, due); err != nil {
		return nil, fmt.Errorf("%s (%d sites): %w", qAnyDueSite, len(looks), err)
	}
	return due, nil
}

// anyDueStatement is AnyDueAcross's statement and its arguments ("" when
// no site is asked).
func anyDueStatement(looks []DueLook) (string, []any, error) {
	var b siteParts
	for i, l := range looks {
		if len(l.Queues) == 0 {
			continue
		}
		if err := b.partIn(qAnyDueSite, i, SiteTables{Store: l.Store, Database: l.Database}, l.Queues); err != nil {
			return "", nil, err
		}
	}
	st := b.statements(0)
	if len(st) == 0 {
		return "", nil, nil
	}
	return st[0].text, st[0].args, nil
}

// DueLooker is AnyDueAcross for a look run again and again over the same
// sites (queuety.Sites, every poll interval): its statement is prepared on
// the server and run again while its text stays the same, as a look over
// hundreds of tables spends about a fifth of its time being parsed. Its
// calls must not overlap.
type DueLooker struct {
	db   *sqlx.DB
	text string
	stmt *sql.Stmt
}

// NewDueLooker returns a looker on db; Close releases its statement.
func NewDueLooker(db *sqlx.DB) *DueLooker { return &DueLooker{db: db} }

// AnyDue is AnyDueAcross(ctx, db, looks).
func (d *DueLooker) AnyDue(ctx context.Context, looks []DueLook) ([]bool, error) {
	due := make([]bool, len(looks))
	q, args, err := anyDueStatement(looks)
	if err != nil || q == "" {
		return due, err
	}
	if q = d.db.Rebind(q); q != d.text {
		d.Close()
		if d.stmt, err = d.db.PrepareContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s (%d sites): %w", qAnyDueSite, len(looks), err)
		}
		d.text = q
	}
	rows, err := d.stmt.QueryContext(ctx, args...)
	if err := readSites(rows, err, due); err != nil {
		return nil, fmt.Errorf("%s (%d sites): %w", qAnyDueSite, len(looks), err)
	}
	return due, nil
}

// Close releases the prepared statement.
func (d *DueLooker) Close() {
	if d.stmt != nil {
		_ = d.stmt.Close()
	}
	d.stmt, d.text = nil, ""
}

// readSites reads rows of site indexes (a query's result and error) into
// yes.
func readSites(rows *sql.Rows, err error, yes []bool) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return err
		}
		if i >= 0 && i < len(yes) {
			yes[i] = true
		}
	}
	return rows.Err()
}

// ScheduleLook is one site's part of a batched schedules look: its tables,
// and the time its scheduler's tick compares next_run with (its Store's
// Now).
type ScheduleLook struct {
	SiteTables
	Now time.Time
}

// SchedulesDueAcross tells, in one statement for many sites whose stores
// share one database handle, which of them have a due schedule row:
// due[i] is whether DueScheduleIDs(looks[i].Now, 0, 1) finds one.
func SchedulesDueAcross(ctx context.Context, db *sqlx.DB, looks []ScheduleLook) ([]bool, error) {
	var b siteParts
	for i, l := range looks {
		if err := b.part(qSchedulesDueSite, i, l.SiteTables, DateTime(l.Now)); err != nil {
			return nil, err
		}
	}
	return b.answer(ctx, db, len(looks), qSchedulesDueSite)
}

// siteParts builds a batched statement of many sites: UNION ALL parts,
// each a sites.sql part (or a catalogue read) whose rows start with their
// site's index; a site may have several. Every batched read of sites.go
// is one.
type siteParts struct {
	parts []sitePart
}

// sitePart is one part's text, its tables rendered, and its arguments,
// the site's index first.
type sitePart struct {
	text string
	args []any
}

// unionStatement is parts joined: its text and arguments, and how many
// parts it holds (for errors).
type unionStatement struct {
	text  string
	args  []any
	parts int
}

// part adds sites.sql's part name for site, its tables rendered in its
// database.
func (b *siteParts) part(name string, site int, t SiteTables, args ...any) error {
	text, err := siteText(name, t)
	if err != nil {
		return err
	}
	b.parts = append(b.parts, sitePart{text: text, args: append([]any{site}, args...)})
	return nil
}

// partIn is part for a part with an IN (?) list: args that are slices
// are expanded to as many placeholders (sqlx.In).
func (b *siteParts) partIn(name string, site int, t SiteTables, args ...any) error {
	text, err := siteText(name, t)
	if err != nil {
		return err
	}
	text, a, err := sqlx.In(text, append([]any{site}, args...)...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b.parts = append(b.parts, sitePart{text: text, args: a})
	return nil
}

// siteText is sites.sql's part name with t's tables, named with t's
// database when it has one.
func siteText(name string, t SiteTables) (string, error) {
	if t.Database != "" {
		if err := validDatabaseName(t.Database); err != nil {
			return "", err
		}
	}
	return renderIn(sitesQueries[name], t.Store.tables, t.Database), nil
}

// statements joins the parts with UNION ALL into statements of at most
// per parts each (per 0: one statement), none when there is no part.
func (b *siteParts) statements(per int) []unionStatement {
	if per <= 0 {
		per = max(len(b.parts), 1)
	}
	var out []unionStatement
	for lo := 0; lo < len(b.parts); lo += per {
		chunk := b.parts[lo:min(lo+per, len(b.parts))]
		texts := make([]string, len(chunk))
		var args []any
		for i, p := range chunk {
			texts[i] = p.text
			args = append(args, p.args...)
		}
		out = append(out, unionStatement{text: strings.Join(texts, "\nUNION ALL\n"), args: args, parts: len(chunk)})
	}
	return out
}

// selectSites runs b's statements of at most per parts each (0: one) and
// returns every row read; name labels an error.
func selectSites[R any](ctx context.Context, db *sqlx.DB, b *siteParts, per int, name string) ([]R, error) {
	var all []R
	for _, st := range b.statements(per) {
		var rows []R
		if err := db.SelectContext(ctx, &rows, db.Rebind(st.text), st.args...); err != nil {
			return nil, fmt.Errorf("%s (%d sites): %w", name, st.parts, err)
		}
		all = append(all, rows...)
	}
	return all, nil
}

// read adds a part answering site when the catalogue's read query of t
// (args its arguments) finds a row (exists-site).
func (b *siteParts) read(site int, t SiteTables, query string, args ...any) error {
	q, err := t.Store.queryIn(query, t.Database)
	if err != nil {
		return err
	}
	b.readText(site, q, args...)
	return nil
}

// readText is read with the query's text, rendered for the site already.
func (b *siteParts) readText(site int, q string, args ...any) {
	b.parts = append(b.parts, sitePart{text: strings.Replace(sitesQueries[qExistsSite], "/*read*/", q, 1), args: append([]any{site}, args...)})
}

// answer runs the look over n sites, each part answering with its site's
// index or nothing, and tells which answered; name labels its error.
func (b *siteParts) answer(ctx context.Context, db *sqlx.DB, n int, name string) ([]bool, error) {
	yes := make([]bool, n)
	for _, st := range b.statements(0) {
		rows, err := db.QueryContext(ctx, db.Rebind(st.text), st.args...)
		if err := readSites(rows, err, yes); err != nil {
			return nil, fmt.Errorf("%s (%d sites): %w", name, n, err)
		}
	}
	return yes, nil
}

// StaleLook is one site's part of a batched stale look: its tables, the
// cutoff of its stale sweep (its app clock less its stale timeout), and
// whether it sweeps workflow step jobs too (Config.Workflows).
type StaleLook struct {
	SiteTables
	Cutoff time.Time
	Steps  bool
}

// StaleAcross tells, in one statement for many sites whose stores share
// one database handle, which of them have something for their stale sweep:
// a row it would take (RecoverStaleRows, and with Steps
// RecoverStaleWorkflowSteps, at Cutoff and the store's clock), or with
// Steps a for_each cursor it would drop (DeleteOrphanForEachPlans). Only
// those need to run it.
func StaleAcross(ctx context.Context, db *sqlx.DB, looks []StaleLook) ([]bool, error) {
	var b siteParts
	for i, l := range looks {
		c := DateTime(l.Cutoff)
		future := DateTime(l.Store.clock.Now().Add(StaleFutureTolerance))
		if err := b.part(qStaleSite, i, l.SiteTables, l.Steps, c, c, future); err != nil {
			return nil, err
		}
		if l.Steps {
			if err := b.read(i, l.SiteTables, qAnyOrphanForEachPlan); err != nil {
				return nil, err
			}
		}
	}
	return b.answer(ctx, db, len(looks), qStaleSite)
}

// RetentionLook is one site's part of a batched retention look: its
// tables and the cutoff of each kind its retention policy deletes (its app
// clock less the kind's age).
type RetentionLook struct {
	SiteTables
	Cutoffs map[RetentionKind]time.Time
}

// RetentionDueAcross tells, in one statement for many sites whose stores
// share one database handle, which of them have a row of some kind a
// retention sweep would delete now: whether the kind's first slice
// (PurgeRetentionBatch's read) finds one. A site with a kind the look does
// not read (workflows, whose read locks its rows) is answered yes: its own
// sweep looks.
func RetentionDueAcross(ctx context.Context, db *sqlx.DB, looks []RetentionLook) ([]bool, error) {
	var b siteParts
	own := make([]bool, len(looks))
	for i, l := range looks {
		for _, k := range RetentionKinds {
			cutoff, on := l.Cutoffs[k]
			if !on {
				continue
			}
			if k == RetainWorkflows {
				own[i] = true
				continue
			}
			_, sel, _, err := l.Store.retentionQueriesIn(k, l.Database)
			if err != nil {
				return nil, err
			}
			b.readText(i, sel, DateTime(cutoff), 1)
		}
	}
	yes, err := b.answer(ctx, db, len(looks), "retention-due")
	if err != nil {
		return nil, err
	}
	for i := range yes {
		yes[i] = yes[i] || own[i]
	}
	return yes, nil
}

// SignalLook is one site's part of a batched signal look: its tables and
// the signal id its poller's next round polls after.
type SignalLook struct {
	SiteTables
	After int64
}

// SignalsDueAcross tells, in one statement for many sites whose stores
// share one database handle, which of them have a workflow waiting for a
// signal with a signal row after After: what their signal poll would
// resume.
func SignalsDueAcross(ctx context.Context, db *sqlx.DB, looks []SignalLook) ([]bool, error) {
	var b siteParts
	for i, l := range looks {
		if err := b.part(qSignalsDueSite, i, l.SiteTables, l.After); err != nil {
			return nil, err
		}
	}
	return b.answer(ctx, db, len(looks), qSignalsDueSite)
}

// WaitsDueAcross tells, in one statement for many sites whose stores share
// one database handle, which of them have a wait the wait sweep would look
// at: a workflow waiting for workflows (WaitingForWorkflows), or a terminal
// run_workflow child whose live parent still waits at that step
// (StuckRunWorkflowChildren).
func WaitsDueAcross(ctx context.Context, db *sqlx.DB, sites []SiteTables) ([]bool, error) {
	var b siteParts
	for i, t := range sites {
		if err := b.read(i, t, qWaitingForWorkflowsAfter, 0, 1); err != nil {
			return nil, err
		}
		if err := b.read(i, t, qStuckRunWorkflowChildren, 0, 1); err != nil {
			return nil, err
		}
	}
	return b.answer(ctx, db, len(sites), "waits-due")
}

// DeadlinesDueAcross tells, in one statement for many sites whose stores
// share one database handle, which of them have a running workflow past
// its deadline (OverdueWorkflows, at the server's NOW() as there).
func DeadlinesDueAcross(ctx context.Context, db *sqlx.DB, sites []SiteTables) ([]bool, error) {
	var b siteParts
	for i, t := range sites {
		if err := b.read(i, t, qLcFindOverdueWorkflows, 1); err != nil {
			return nil, err
		}
	}
	return b.answer(ctx, db, len(sites), "deadlines-due")
}

// siteTable is the quoted name of one of a site's tables, with its
// database when one is given (a look on a connection to another database
// of the server).
func siteTable(s *Store, database, table string) (string, error) {
	name := "`" + s.tables[table] + "`"
	if database == "" {
		return name, nil
	}
	if err := validDatabaseName(database); err != nil {
		return "", err
	}
	return "`" + database + "`." + name, nil
}

// SiteTables names one site of a batched read: its Store, and its
// database when the read runs on a connection to another database of the
// server.
type SiteTables struct {
	Store    *Store
	Database string
}

// WebhooksAcross answers Webhooks for many sites whose stores share one
// database handle, in one statement (UNION ALL of each site's
// webhooks-list): hooks[i] are the registrations of sites[i], oldest
// first, as Webhooks returns them.
func WebhooksAcross(ctx context.Context, db *sqlx.DB, sites []SiteTables) ([][]WebhookRow, error) {
	hooks := make([][]WebhookRow, len(sites))
	var b siteParts
	for i, s := range sites {
		if err := b.part(qWebhooksSite, i, s); err != nil {
			return nil, err
		}
		hooks[i] = []WebhookRow{}
	}
	rows, err := selectSites[struct {
		Site int `db:"site"`
		WebhookRow
	}](ctx, db, &b, 0, qWebhooksSite)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Site >= 0 && r.Site < len(hooks) {
			hooks[r.Site] = append(hooks[r.Site], r.WebhookRow)
		}
	}
	for _, h := range hooks {
		slices.SortFunc(h, func(a, b WebhookRow) int { return cmp.Compare(a.ID, b.ID) })
	}
	return hooks, nil
}

// OpenJobsAcross counts the open jobs (pending, processing, failed,
// buried) by queue and status of many sites whose stores share one
// database handle, in one statement (UNION ALL of each site's
// metrics-jobs): jobs[i] are sites[i]'s, as MetricsSnapshot's Jobs.
func OpenJobsAcross(ctx context.Context, db *sqlx.DB, sites []SiteTables) ([][]MetricsJobCount, error) {
	jobs := make([][]MetricsJobCount, len(sites))
	var b siteParts
	for i, s := range sites {
		if err := b.part(qOpenJobsSite, i, s); err != nil {
			return nil, err
		}
	}
	rows, err := selectSites[struct {
		Site int `db:"site"`
		MetricsJobCount
	}](ctx, db, &b, 0, qOpenJobsSite)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Site >= 0 && r.Site < len(jobs) {
			jobs[r.Site] = append(jobs[r.Site], r.MetricsJobCount)
		}
	}
	return jobs, nil
}

// WorkerBeat is one site's part of a batched registration heartbeat: the
// values heartbeat-worker writes for its worker (sessions.Registry.Beat).
type WorkerBeat struct {
	SiteTables
	Namespace, WorkerID       string
	At                        time.Time
	TaskSlots, ProcessMetrics sql.NullString
}

// beatsPerStatement keeps a batched heartbeat's join within MariaDB's 61
// tables (the one-row table joined to 60 sites').
const beatsPerStatement = 60

// HeartbeatWorkersAcross runs HeartbeatWorker for many sites whose stores
// share one database handle, in one UPDATE each 60 sites and one read:
// registered[i] tells whether beats[i]'s worker still had its row (false:
// it was deregistered; the caller registers it again). changed is the
// rows the UPDATEs changed, each of which moved the server's
// Handler_update (WriteCounters), so a caller can tell its own writes
// from another client's; it is 0 when err is not nil.
func HeartbeatWorkersAcross(ctx context.Context, db *sqlx.DB, beats []WorkerBeat) (registered []bool, changed int64, err error) {
	registered = make([]bool, len(beats))
	tables := make([]string, len(beats))
	for i, b := range beats {
		if tables[i], err = siteTable(b.Store, b.Database, "workers"); err != nil {
			return nil, 0, err
		}
	}
	for lo := 0; lo < len(beats); lo += beatsPerStatement {
		hi := min(lo+beatsPerStatement, len(beats))
		var joins, sets []string
		var joinArgs, setArgs []any
		for i := lo; i < hi; i++ {
			b, alias := beats[i], fmt.Sprintf("w%d", i-lo)
			r := strings.NewReplacer("{workers}", tables[i], "{w}", alias)
			joins = append(joins, r.Replace(sitesQueries[qBeatJoin]))
			sets = append(sets, r.Replace(sitesQueries[qBeatSet]))
			joinArgs = append(joinArgs, b.Namespace, b.WorkerID)
			setArgs = append(setArgs, b.At, b.At, b.TaskSlots, b.ProcessMetrics)
		}
		q := strings.NewReplacer("{joins}", strings.Join(joins, "\n"), "{sets}", strings.Join(sets, ",\n")).
			Replace(sitesQueries[qBeatWorkers])
		res, err := db.ExecContext(ctx, db.Rebind(q), append(joinArgs, setArgs...)...)
		if err != nil {
			return nil, 0, fmt.Errorf("%s (%d sites): %w", qBeatWorkers, hi-lo, err)
		}
		// The driver reports changed rows (not matched ones): at most
		// what moved Handler_update, never more.
		n, err := res.RowsAffected()
		if err != nil {
			return nil, 0, fmt.Errorf("%s (%d sites): %w", qBeatWorkers, hi-lo, err)
		}
		changed += n
	}
	var read siteParts
	for i, b := range beats {
		if err := read.part(qRegistered, i, b.SiteTables, b.Namespace, b.WorkerID); err != nil {
			return nil, 0, err
		}
	}
	registered, err = read.answer(ctx, db, len(beats), qRegistered)
	if err != nil {
		return nil, 0, err
	}
	return registered, changed, nil
}

// validDatabaseName keeps a database name to what can be backquoted.
func validDatabaseName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "`\x00") {
		return fmt.Errorf("database name %q: cannot be quoted", name)
	}
	return nil
}

// Blog is a wp_blogs row WordPress serves.
type Blog struct {
	ID     int64  `db:"blog_id"`
	SiteID int64  `db:"site_id"`
	Domain string `db:"domain"`
	Path   string `db:"path"`
}

// NetworkBlogs lists the served subsites of the multisite network whose
// base table prefix is base (wp-config's $table_prefix): <base>blogs rows
// neither archived, deleted nor spam.
func NetworkBlogs(ctx context.Context, db *sqlx.DB, base string) ([]Blog, error) {
	if err := validTableName(base + "blogs"); err != nil {
		return nil, err
	}
	q := strings.Replace(sitesQueries[qNetworkBlogs], "/*blogs*/", "`"+base+"blogs`", 1)
	var out []Blog
	if err := db.SelectContext(ctx, &out, q); err != nil {
		return nil, fmt.Errorf("%s: %w", qNetworkBlogs, err)
	}
	return out, nil
}

// TablesPresent reports which of names exist in db's database.
func TablesPresent(ctx context.Context, db *sqlx.DB, names []string) (map[string]bool, error) {
	have := map[string]bool{}
	if len(names) == 0 {
		return have, nil
	}
	q, args, err := sqlx.In(sitesQueries[qTablesPresent], names)
	if err != nil {
		return nil, err
	}
	var found []string
	if err := db.SelectContext(ctx, &found, db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qTablesPresent, err)
	}
	for _, n := range found {
		have[n] = true
	}
	return have, nil
}

// ErrNoSites is returned by a discovery that found nothing to serve.
var ErrNoSites = errors.New("no sites to serve")

// ServerOf splits a DSN into the server it names (the DSN without its
// database, used as a key and to connect for looks that name every table
// with its database) and its database name.
func ServerOf(dsn string) (server, database string, err error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return "", "", err
	}
	database = cfg.DBName
	cfg.DBName = ""
	return cfg.FormatDSN(), database, nil
}

// ServerName names the server of a DSN for people (a metric's label, a
// log): its user and address, never its password ("" for a DSN that does
// not parse).
func ServerName(dsn string) string {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return ""
	}
	addr := cfg.Addr
	if cfg.Net == "unix" {
		addr = "unix(" + addr + ")"
	}
	if cfg.User == "" {
		return addr
	}
	return cfg.User + "@" + addr
}

// ServerQuestions is the server's Questions counter: the statements every
// client has sent it since it started, this one included.
func ServerQuestions(ctx context.Context, db *sqlx.DB) (int64, error) {
	var row struct {
		Name  string `db:"Variable_name"`
		Value int64  `db:"Value"`
	}
	if err := db.GetContext(ctx, &row, sitesQueries[qQuestions]); err != nil {
		return 0, fmt.Errorf("%s: %w", qQuestions, err)
	}
	return row.Value, nil
}

// ServerConnections counts the server's client connections whose current
// database is named like pattern (LIKE: % and _).
func ServerConnections(ctx context.Context, db *sqlx.DB, pattern string) (int, error) {
	var n int
	if err := db.GetContext(ctx, &n, sitesQueries[qConnections], pattern); err != nil {
		return 0, fmt.Errorf("%s: %w", qConnections, err)
	}
	return n, nil
}

// WriteCounters is a reading of the server's write counters
// (ReadWriteCounters): two readings are equal when no client wrote a row
// or committed a transaction between them.
type WriteCounters struct {
	// Updated is Handler_update, apart: a caller that knows how many rows
	// its own UPDATEs changed can take them off (HeartbeatWorkersAcross).
	Updated int64
	// Others are the other counters, "name=value …" by name.
	Others string
}

// ErrNoWriteCounters is returned by ReadWriteCounters from a server that
// does not report the counters it needs (not MariaDB or MySQL): its
// readings would tell nothing.
var ErrNoWriteCounters = errors.New("the server reports no write counters")

// writeCountersNeeded are the counters a reading must have to tell that
// nothing was written; the others (XA, Galera) are read where present.
var writeCountersNeeded = []string{"Com_commit", "Handler_delete", "Handler_update", "Handler_write"}

// ReadWriteCounters reads the server's counters of rows written and
// transactions committed, every client's (server-write-counters).
func ReadWriteCounters(ctx context.Context, db *sqlx.DB) (WriteCounters, error) {
	var c WriteCounters
	rows, err := db.QueryContext(ctx, sitesQueries[qWriteCounters])
	if err != nil {
		return c, fmt.Errorf("%s: %w", qWriteCounters, err)
	}
	defer rows.Close()
	values := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return c, fmt.Errorf("%s: %w", qWriteCounters, err)
		}
		values[name] = value
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("%s: %w", qWriteCounters, err)
	}
	for _, n := range writeCountersNeeded {
		if _, ok := values[n]; !ok {
			return c, fmt.Errorf("%w: no %s", ErrNoWriteCounters, n)
		}
	}
	if c.Updated, err = strconv.ParseInt(values["Handler_update"], 10, 64); err != nil {
		return c, fmt.Errorf("%s: Handler_update: %w", qWriteCounters, err)
	}
	delete(values, "Handler_update")
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(&b, "%s=%s ", n, values[n])
	}
	c.Others = strings.TrimSpace(b.String())
	return c, nil
}

// noiseStatement is a bench-noise statement on database's table.
func noiseStatement(name, database, table string) string {
	return strings.Replace(sitesQueries[name], "/*name*/", quoteIdent(database)+"."+quoteIdent(table), 1)
}

// CreateNoiseTable creates database's table for WriteNoise.
func CreateNoiseTable(ctx context.Context, db sqlx.ExecerContext, database, table string) error {
	_, err := db.ExecContext(ctx, noiseStatement(qNoiseTable, database, table))
	if err != nil {
		return fmt.Errorf("%s: %w", qNoiseTable, err)
	}
	return nil
}

// WriteNoise inserts one row into a CreateNoiseTable table: a neighbour's
// write that bench sites measures the idle look under.
func WriteNoise(ctx context.Context, db sqlx.ExecerContext, database, table string) error {
	_, err := db.ExecContext(ctx, noiseStatement(qNoiseRow, database, table))
	if err != nil {
		return fmt.Errorf("%s: %w", qNoiseRow, err)
	}
	return nil
}
