package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// runCounter counts handler runs per job id.
type runCounter struct {
	mu   sync.Mutex
	runs map[int64]int
}

func newRunCounter() *runCounter { return &runCounter{runs: map[int64]int{}} }

func (r *runCounter) add(id int64) {
	r.mu.Lock()
	r.runs[id]++
	r.mu.Unlock()
}

func (r *runCounter) get(id int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

func (r *runCounter) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.runs {
		n += v
	}
	return n
}

// dispatchN dispatches n jobs of handler with payloads {"i": 0…n-1}.
func dispatchN(t *testing.T, c *Client, handler string, n int, opts ...DispatchOption) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		d, err := c.Dispatch(context.Background(), handler, map[string]any{"i": i}, opts...)
		require.NoError(t, err)
		ids[i] = d.ID
	}
	return ids
}

// A handler sees its row already claimed: processing, held by its worker,
// attempt counted, `started` logged. Nothing it does can be undone by the
// claim.
func TestHandlerStartsOnACommittedClaim(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	type seen struct {
		status, reservedBy string
		attempts, started  int
	}
	got := make(chan seen, 1)
	reg := NewRegistry()
	reg.HandleFunc("look", func(ctx context.Context, j *Job) error {
		// Another connection than the claim's: only committed rows show.
		var s seen
		err := c.store.DB().QueryRowContext(ctx, "SELECT status, reserved_by, attempts FROM `"+c.store.Tables()["jobs"]+"` WHERE id = ?", j.ID).
			Scan(&s.status, &s.reservedBy, &s.attempts)
		if err == nil {
			err = c.store.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+c.store.Tables()["logs"]+"` WHERE job_id = ? AND event = 'started'", j.ID).Scan(&s.started)
		}
		got <- s
		return err
	})
	w := startWorker(t, c, reg)
	d, err := c.Dispatch(ctx, "look", nil)
	require.NoError(t, err)
	id := d.ID
	select {
	case s := <-got:
		require.Equal(t, seen{status: "processing", reservedBy: w.ID(), attempts: 1, started: 1}, s)
	case <-time.After(10 * time.Second):
		t.Fatal("handler never ran")
	}
	waitFor(t, 10*time.Second, "completed", func() bool { return jobRow(t, c, id).Status == "completed" })
	require.Equal(t, []string{"started", "completed"}, logEvents(jobLogs(t, c, id)))
}

// A claim the server refuses to commit runs no handler: its rows are
// pending again, attempts unspent, and each job runs once when a later
// claim commits. (A trigger makes the claim's `started` log insert fail,
// as a deadlock or a lost connection would end the transaction.)
func TestClaimRolledBackRunsNoHandler(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 8 })
	ctx := context.Background()
	runs := newRunCounter()
	reg := NewRegistry()
	reg.HandleFunc("count", func(_ context.Context, j *Job) error { runs.add(j.ID); return nil })
	ids := dispatchN(t, c, "count", 6)
	execSQL(t, c, "CREATE TRIGGER refuse_started BEFORE INSERT ON {logs} FOR EACH ROW "+
		"IF NEW.event = 'started' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'claim refused by test'; END IF")
	w := startWorker(t, c, reg)
	// Many claims are refused meanwhile: none may have run a handler.
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, runs.total(), "a handler ran on a claim that was rolled back")
	for _, id := range ids {
		j := jobRow(t, c, id)
		require.Equal(t, "pending", j.Status)
		require.Zero(t, j.Attempts)
	}
	execSQL(t, c, "DROP TRIGGER refuse_started")
	waitFor(t, 10*time.Second, "all completed", func() bool { return countStatus(t, c, "completed") == len(ids) })
	require.NoError(t, w.Stop(ctx))
	for _, id := range ids {
		require.Equal(t, 1, runs.get(id), "job %d runs", id)
		require.Equal(t, 1, jobRow(t, c, id).Attempts)
		require.Equal(t, []string{"started", "completed"}, logEvents(jobLogs(t, c, id)))
	}
}

// hugeError is a failure whose message and trace are far over a TEXT
// column's 64 KiB.
type hugeError struct{ msg, trace string }

func (e hugeError) Error() string      { return e.msg }
func (e hugeError) ErrorTrace() string { return e.trace }
func (e hugeError) ErrorClass() string { return "RuntimeException" }

// A job failing with a message (or trace) too long for its column is
// retried and then buried with the message cut to fit, on a character
// boundary; the jobs claimed beside it run once each.
func TestOversizedErrorIsCutToFitAndNeighboursRunOnce(t *testing.T) {
	t.Parallel()
	cases := map[string]hugeError{
		"100 KB ascii":       {msg: strings.Repeat("x", 100_000)},
		"80 KB of é":         {msg: strings.Repeat("é", 40_000)},
		"short, deep trace":  {msg: "boom", trace: strings.Repeat("#0 /app/src/Deep.php(12): Deep->call()\n", 3000)},
		"invalid utf-8 tail": {msg: strings.Repeat("y", 70_000) + "\xff\xfe"},
	}
	for name, herr := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4 })
			ctx := context.Background()
			runs := newRunCounter()
			reg := NewRegistry()
			reg.HandleFunc("count", func(_ context.Context, j *Job) error { runs.add(j.ID); return nil })
			reg.HandleFunc("huge", func(_ context.Context, j *Job) error { runs.add(j.ID); return herr },
				WithMaxAttempts(2), WithBackoff(Backoff{List: []int{0}}))
			d, err := c.Dispatch(ctx, "huge", nil)
			require.NoError(t, err)
			bad := d.ID
			good := dispatchN(t, c, "count", 3)
			w := startWorker(t, c, reg)
			waitFor(t, 15*time.Second, "the failing job buried", func() bool { return jobRow(t, c, bad).Status == "buried" })
			waitFor(t, 10*time.Second, "the others completed", func() bool { return countStatus(t, c, "completed") == 3 })
			require.NoError(t, w.Stop(ctx))
			for _, id := range good {
				require.Equal(t, 1, runs.get(id), "neighbour %d runs", id)
			}
			require.Equal(t, 2, runs.get(bad), "retried once, then buried")
			j := jobRow(t, c, bad)
			require.Equal(t, 2, j.Attempts)
			requireFits(t, j.ErrorMessage.String, herr.msg)
			logs := jobLogs(t, c, bad)
			require.Equal(t, []string{"started", "failed", "retried", "started", "buried"}, logEvents(logs))
			for _, l := range logs {
				if l.ErrorMessage.Valid {
					requireFits(t, l.ErrorMessage.String, herr.msg)
				}
				if herr.trace != "" && l.ErrorTrace.Valid {
					requireFits(t, l.ErrorTrace.String, herr.trace)
				}
			}
		})
	}
}

// requireFits checks stored is original, or its start cut to a TEXT
// column on a character boundary and marked "…".
func requireFits(t *testing.T, stored, original string) {
	t.Helper()
	require.True(t, utf8.ValidString(stored), "valid UTF-8")
	require.LessOrEqual(t, len(stored), store.TextBytes)
	if len(original) <= store.TextBytes && utf8.ValidString(original) {
		require.Equal(t, original, stored)
		return
	}
	require.True(t, strings.HasSuffix(stored, "…"), "marked as cut")
	cut := strings.TrimSuffix(stored, "…")
	require.Greater(t, len(cut), store.TextBytes-8, "cut close to the column size")
	require.True(t, strings.HasPrefix(strings.ToValidUTF8(original, "\uFFFD"), cut), "a prefix of the original")
}

// A failure the server refuses even after fitting (here a trigger) buries
// that job with a message naming the refusal, instead of leaving it
// processing for the stale sweep; the others are not affected.
func TestRefusedFailureWriteBuriesTheJob(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	reg := NewRegistry()
	reg.HandleFunc("ok", func(context.Context, *Job) error { return nil })
	reg.HandleFunc("poison", func(context.Context, *Job) error { return errors.New("poison: refused by the server") },
		WithMaxAttempts(1))
	execSQL(t, c, "CREATE TRIGGER refuse_poison BEFORE INSERT ON {logs} FOR EACH ROW "+
		"IF NEW.error_message LIKE 'poison:%' THEN SIGNAL SQLSTATE '22001' SET MESSAGE_TEXT = 'value refused by test'; END IF")
	d, err := c.Dispatch(ctx, "poison", nil)
	require.NoError(t, err)
	bad := d.ID
	d, err = c.Dispatch(ctx, "ok", nil)
	require.NoError(t, err)
	good := d.ID
	w := startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "buried", func() bool { return jobRow(t, c, bad).Status == "buried" })
	waitFor(t, 10*time.Second, "completed", func() bool { return jobRow(t, c, good).Status == "completed" })
	require.NoError(t, w.Stop(ctx))
	j := jobRow(t, c, bad)
	require.Contains(t, j.ErrorMessage.String, "could not record its failure")
	require.Contains(t, j.ErrorMessage.String, "value refused by test")
	require.Equal(t, []string{"started", "buried"}, logEvents(jobLogs(t, c, bad)))
	require.EqualValues(t, 1, w.Stats().Buried)
}

// PHP's empty payload `[]` decodes into a Typed handler's struct; a payload
// that cannot decode into it buries the job on its first attempt.
func TestTypedHandlerPayloads(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	type args struct {
		MS int `json:"ms"`
	}
	var got atomic.Int64
	reg := NewRegistry()
	reg.Register("typed", Typed(func(_ context.Context, _ *Job, p args) error {
		got.Add(int64(p.MS) + 1)
		return nil
	}), WithMaxAttempts(5))
	d, err := c.Dispatch(ctx, "typed", nil) // stored as []
	require.NoError(t, err)
	empty := d.ID
	require.Equal(t, "[]", jobRow(t, c, empty).Payload)
	d, err = c.Dispatch(ctx, "typed", map[string]any{"ms": "not a number"})
	require.NoError(t, err)
	bad := d.ID
	w := startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "both settled", func() bool {
		return jobRow(t, c, empty).Status == "completed" && jobRow(t, c, bad).Status == "buried"
	})
	require.NoError(t, w.Stop(ctx))
	require.EqualValues(t, 1, got.Load(), "the empty payload ran once with the zero value")
	j := jobRow(t, c, bad)
	require.Equal(t, 1, j.Attempts, "buried on its first attempt")
	require.Contains(t, j.ErrorMessage.String, "Invalid payload: decoding payload")
}

// A concurrency group at its limit at the head of a queue does not keep
// the plain jobs behind it waiting while slots are free.
func TestSaturatedGroupDoesNotStarveTheQueue(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4; cfg.MaxClaimBatch = 4; cfg.ClaimLanes = 1 })
	ctx := context.Background()
	release := make(chan struct{})
	runs := newRunCounter()
	reg := NewRegistry()
	reg.HandleFunc("grouped", func(ctx context.Context, j *Job) error {
		runs.add(j.ID)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	reg.HandleFunc("plain", func(_ context.Context, j *Job) error { runs.add(j.ID); return nil })
	grouped := dispatchN(t, c, "grouped", 20, ConcurrencyGroup("one-at-a-time", 1))
	plain := dispatchN(t, c, "plain", 5)
	w := startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "the plain jobs behind the group", func() bool {
		for _, id := range plain {
			if jobRow(t, c, id).Status != "completed" {
				return false
			}
		}
		return true
	})
	require.Equal(t, 1, countStatus(t, c, "processing"), "the group still runs one at a time")
	close(release)
	waitFor(t, 20*time.Second, "the group drained", func() bool { return countStatus(t, c, "completed") == 25 })
	require.NoError(t, w.Stop(ctx))
	for _, id := range append(grouped, plain...) {
		require.Equal(t, 1, runs.get(id), fmt.Sprintf("job %d runs", id))
	}
}

// lockedBuffer is a log sink tests read while a worker writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker says at start which pending jobs on its queues it will leave,
// and what would run them, instead of leaving them silently.
func TestWorkerReportsWorkItWillLeave(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	c := newTestClient(t, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	ctx := context.Background()
	_, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, nil)
	require.NoError(t, err)
	_, _, err = c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("brief").Then(`App\Steps\Plan`), wfObj(t)))
	require.NoError(t, err)
	reg := NewRegistry()
	reg.HandleFunc("go.one", func(context.Context, *Job) error { return nil })
	w := startWorker(t, c, reg)
	require.NoError(t, w.Stop(ctx))
	out := logs.String()
	require.Contains(t, out, "workflows=false")
	require.Regexp(t, `pending jobs this worker will not run" .*handler=App\\Jobs\\SendEmail jobs=1 why="no Go handler`, out)
	require.Regexp(t, `handler=App\\Steps\\Plan jobs=1 why="workflow steps are off \(--no-workflows; Config.Workflows\)`, out)

	// With workflows on but no Go step handler (and no PHP pool) for the
	// class, the step is still left, and the report says why.
	logs2 := &lockedBuffer{}
	c2 := newTestClient(t, func(cfg *Config) {
		cfg.Workflows = true
		cfg.Logger = slog.New(slog.NewTextHandler(logs2, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	_, _, err = c2.DispatchWorkflow(ctx, mustBuild(t, workflow.New("brief").Then(`App\Steps\Plan`), wfObj(t)))
	require.NoError(t, err)
	w2 := startWorker(t, c2, reg)
	require.NoError(t, w2.Stop(ctx))
	require.Regexp(t, `handler=App\\Steps\\Plan jobs=1 why="no Go step handler for this class`, logs2.String())
}
