package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testbin"
	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

const (
	jobsTable = "wp_queuety_jobs"
	logsTable = "wp_queuety_logs"
	runsTable = "chaos_runs"
)

// rounds is QUEUETY_CHAOS_ROUNDS (`make chaos` sets it), else def: the
// short version plain `go test` runs.
func rounds(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv("QUEUETY_CHAOS_ROUNDS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "QUEUETY_CHAOS_ROUNDS")
	require.Positive(t, n, "QUEUETY_CHAOS_ROUNDS")
	return n
}

// openDB opens dsn with the driver settings queuety-go uses.
func openDB(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	prepared, err := store.PrepareDSN(dsn)
	require.NoError(t, err)
	db, err := sqlx.Open("mysql", prepared)
	require.NoError(t, err)
	db.SetMaxOpenConns(4)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// prepare migrates the Queuety tables into dsn's database and creates the
// side table the handlers record their runs in.
func prepare(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	_, err = c.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	db := openDB(t, dsn)
	_, err = db.Exec("CREATE TABLE IF NOT EXISTS " + runsTable + ` (
		token CHAR(16) NOT NULL PRIMARY KEY,
		job_id BIGINT UNSIGNED NOT NULL,
		pid INT NOT NULL,
		attempt INT NOT NULL,
		worker VARCHAR(64) NOT NULL,
		started_us BIGINT DEFAULT NULL,
		ended_us BIGINT DEFAULT NULL,
		created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		INDEX idx_job (job_id)
	) ENGINE=InnoDB`)
	require.NoError(t, err)
	return db
}

// reset empties the job, log and run tables between rounds.
func reset(t *testing.T, db *sqlx.DB) {
	t.Helper()
	for _, tbl := range []string{jobsTable, logsTable, runsTable} {
		_, err := db.Exec("DELETE FROM " + tbl)
		require.NoError(t, err)
	}
}

// insertJobs enqueues n chaosHandler jobs on the default queue, with
// attempts to spare for the rescues a round causes.
func insertJobs(t *testing.T, db *sqlx.DB, n int) {
	t.Helper()
	for done := 0; done < n; {
		batch := min(500, n-done)
		var sb strings.Builder
		sb.WriteString("INSERT INTO " + jobsTable + " (queue, handler, payload, max_attempts) VALUES ")
		args := make([]any, 0, 2*batch)
		for i := range batch {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("('default', ?, ?, 20)")
			args = append(args, chaosHandler, fmt.Sprintf(`{"i":%d}`, done+i))
		}
		_, err := db.Exec(sb.String(), args...)
		require.NoError(t, err)
		done += batch
	}
}

func completed(t *testing.T, db *sqlx.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))
	return n
}

// proc is one `queuety work` process (or a PHP worker) of a round.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    testbin.SyncBuffer
	exited chan struct{}
	err    error // set when exited is closed
	killed bool  // the suite SIGKILLed it
	// selfExit: the process ends on its own (a PHP worker once the queue
	// stays empty); the round checks its exit status itself.
	selfExit bool
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process and waits for it: no shutdown code runs.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.killed = true
	require.NoError(t, p.cmd.Process.Kill())
	<-p.exited
}

// stop sends SIGTERM and requires a clean exit within d.
func (p *proc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	if !p.alive() {
		t.Errorf("%s had exited before the end of the round: %v\n%s", p.name, p.err, tail(p.out.String()))
		return
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("%s exited with %v after SIGTERM\n%s", p.name, p.err, tail(p.out.String()))
		}
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("%s still running %s after SIGTERM\n%s", p.name, d, tail(p.out.String()))
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// fleet starts and tracks a round's processes.
type fleet struct {
	t       *testing.T
	runsDSN string // the handler's side-table connection
	mu      sync.Mutex
	procs   []*proc
}

func newFleet(t *testing.T, runsDSN string) *fleet {
	f := &fleet{t: t, runsDSN: runsDSN}
	t.Cleanup(func() {
		for _, p := range f.procs {
			if p.alive() {
				_ = p.cmd.Process.Kill() // only processes this suite started
				<-p.exited
			}
		}
	})
	return f
}

// workArgs are the `work` flags of every round: a short stale timeout and
// a sweep every second, so a killed worker's jobs come back within seconds.
var workArgs = []string{"work", "--concurrency", "16", "--poll-interval", "20ms",
	"--stale-timeout", "3s", "--rescue-schedule", "@every 1s", "--backoff", "1", "--job-timeout", "60s"}

// worker starts `queuety work` against dsn with name as its worker id.
func (f *fleet) worker(name, dsn string, extra ...string) *proc {
	return f.workerWith(workArgs, name, dsn, extra...)
}

// workerWith is worker with other `work` flags than workArgs.
func (f *fleet) workerWith(work []string, name, dsn string, extra ...string) *proc {
	args := append([]string{"--dsn", dsn, "--log-level", "warn"}, work...)
	args = append(append(args, "--worker-id", name), extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=work", runsDSNEnv+"="+f.runsDSN, workerEnv+"="+name)
	return f.start(name, cmd)
}

func (f *fleet) start(name string, cmd *exec.Cmd) *proc {
	f.t.Helper()
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	require.NoError(f.t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p
}

// killedNames are the workers the suite SIGKILLed.
func (f *fleet) killedNames() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]bool{}
	for _, p := range f.procs {
		if p.killed {
			m[p.name] = true
		}
	}
	return m
}

// requireAlive fails the test when a process the suite did not kill has
// exited: the daemon must ride out every fault.
func (f *fleet) requireAlive() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if !p.killed && !p.alive() && (!p.selfExit || p.err != nil) {
			f.t.Fatalf("%s exited during the round: %v\n%s", p.name, p.err, tail(p.out.String()))
		}
	}
}

func (f *fleet) stopAll(d time.Duration) {
	f.t.Helper()
	f.mu.Lock()
	ps := append([]*proc(nil), f.procs...)
	f.mu.Unlock()
	for _, p := range ps {
		if !p.killed && !p.selfExit {
			p.stop(f.t, d)
		}
	}
}

// drain waits until n jobs are completed, up to d, checking that the
// processes live. It returns false at the deadline (the tally then counts
// the jobs lost).
func drain(t *testing.T, db *sqlx.DB, f *fleet, n int, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		f.requireAlive()
		var c int
		if err := db.Get(&c, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"); err == nil && c >= n {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// tally is what a round counts.
type tally struct {
	Jobs int
	// Lost: jobs not completed at the end of the round.
	Lost int
	// DoubleCompletions: jobs with more than one `completed` log row.
	DoubleCompletions int
	// Reruns: jobs whose handler ran more than once; Excused those whose
	// extra runs all happened in a worker the suite killed, which did not
	// complete them; Unexcused the rest.
	Reruns, Excused, Unexcused int
	// Of the unexcused: SameAttempt jobs ran one attempt number twice (the
	// claim holding it was rolled back after its handler ran), NewAttempt
	// jobs ran again under a new attempt (the attempt was handed back).
	SameAttempt, NewAttempt int
	// Unfinished: runs in a killed worker of jobs it did not complete
	// (started, then lost with the process).
	Unfinished int
	examples   []string
}

func (a *tally) add(b tally) {
	a.Jobs += b.Jobs
	a.Lost += b.Lost
	a.DoubleCompletions += b.DoubleCompletions
	a.Reruns += b.Reruns
	a.Excused += b.Excused
	a.Unexcused += b.Unexcused
	a.Unfinished += b.Unfinished
	a.SameAttempt += b.SameAttempt
	a.NewAttempt += b.NewAttempt
	if len(a.examples) < 5 {
		a.examples = append(a.examples, b.examples...)
	}
}

func (a tally) String() string {
	return fmt.Sprintf("jobs=%d lost=%d double_completions=%d runs>1=%d (after a kill %d, other %d: same attempt %d, new attempt %d); killed workers' unfinished runs=%d",
		a.Jobs, a.Lost, a.DoubleCompletions, a.Reruns, a.Excused, a.Unexcused, a.SameAttempt, a.NewAttempt, a.Unfinished)
}

// count reads a round's outcome. killed names the workers the suite
// SIGKILLed: a run there of a job it did not complete may be followed by
// another (the job's attempt died with the process).
func count(t *testing.T, db *sqlx.DB, killed map[string]bool) tally {
	t.Helper()
	var jobs []struct {
		ID         int64   `db:"id"`
		Status     string  `db:"status"`
		ReservedBy *string `db:"reserved_by"`
	}
	require.NoError(t, db.Select(&jobs, "SELECT id, status, reserved_by FROM "+jobsTable))
	var doubles int
	require.NoError(t, db.Get(&doubles, "SELECT COUNT(*) FROM (SELECT job_id FROM "+logsTable+
		" WHERE event = 'completed' GROUP BY job_id HAVING COUNT(*) > 1) d"))
	var runs []struct {
		JobID   int64  `db:"job_id"`
		Worker  string `db:"worker"`
		Attempt int    `db:"attempt"`
	}
	require.NoError(t, db.Select(&runs, "SELECT job_id, worker, attempt FROM "+runsTable+" ORDER BY created_at"))
	byJob := map[int64][]string{}
	repeated := map[int64]bool{} // an attempt number ran twice
	seen := map[[2]int64]bool{}
	attempts := map[int64][]string{} // "worker#attempt", for the examples
	for _, r := range runs {
		byJob[r.JobID] = append(byJob[r.JobID], r.Worker)
		k := [2]int64{r.JobID, int64(r.Attempt)}
		repeated[r.JobID] = repeated[r.JobID] || seen[k]
		seen[k] = true
		attempts[r.JobID] = append(attempts[r.JobID], fmt.Sprintf("%s#%d", r.Worker, r.Attempt))
	}
	tl := tally{Jobs: len(jobs), DoubleCompletions: doubles}
	for _, j := range jobs {
		if j.Status != "completed" {
			tl.Lost++
			if len(tl.examples) < 5 {
				tl.examples = append(tl.examples, fmt.Sprintf("job %d lost: status %s, runs %v", j.ID, j.Status, attempts[j.ID]))
			}
			continue
		}
		ws := byJob[j.ID]
		owner := ""
		if j.ReservedBy != nil {
			owner = *j.ReservedBy
		}
		extra := len(ws) - 1
		for _, w := range ws {
			if killed[w] && w != owner {
				extra--
				tl.Unfinished++
			}
		}
		if len(ws) <= 1 {
			continue
		}
		tl.Reruns++
		if extra <= 0 {
			tl.Excused++
			continue
		}
		tl.Unexcused++
		if repeated[j.ID] {
			tl.SameAttempt++
		} else {
			tl.NewAttempt++
		}
		if len(tl.examples) < 5 {
			// worker#attempt in run order: the same attempt twice is an
			// attempt whose claim the server rolled back after its
			// handler ran.
			tl.examples = append(tl.examples, fmt.Sprintf("job %d ran %d times (%s), completed by %q", j.ID, len(ws), strings.Join(attempts[j.ID], ", "), owner))
		}
	}
	return tl
}

// check asserts the final guarantees: nothing lost, nothing completed
// twice, no handler run twice except after its worker was killed.
func check(t *testing.T, name string, tl tally) {
	t.Helper()
	if tl.Lost != 0 || tl.DoubleCompletions != 0 || tl.Unexcused != 0 {
		t.Errorf("%s: %s\n%s", name, tl, strings.Join(tl.examples, "\n"))
		return
	}
	t.Logf("%s: %s", name, tl)
}
