package queuety

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/schedule"
	"github.com/queuety-go/queuety/queuety/internal/scheduler"
	store "github.com/queuety-go/queuety/sql"
)

var scheduleStart = time.Date(2026, 12, 1, 11, 8, 39, 0, time.UTC)

func TestAddScheduleWritesThePluginRow(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(scheduleStart)
	c := newTestClient(t, func(cfg *Config) { cfg.Clock = clk })
	ctx := context.Background()

	id, err := c.AddSchedule(ctx, NewSchedule{Handler: "record", Payload: map[string]any{"source": "interval"}, Every: "10 minutes"})
	require.NoError(t, err)
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "report", Payload: `{"source":"day 1 and monday"}`, Cron: "0 9 1 * 1"})
	require.NoError(t, err)
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "noop", Every: "5 minutes", Overlap: "skip", Queue: "critical"})
	require.NoError(t, err)

	rows, err := c.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	r := rows[0]
	require.Equal(t, id, r.ID)
	// schedule_interval.json snapshot 0
	require.Equal(t, []any{"record", `{"source":"interval"}`, "default", "10 minutes", "interval", false, "2026-12-01 11:18:39", "allow", true},
		[]any{r.Handler, r.Payload, r.Queue, r.Expression, r.ExpressionType, r.LastRun != nil, store.DateTime(r.NextRun), r.OverlapPolicy, r.Enabled})
	// schedule_cron.json snapshot 0: day 1 AND Monday
	require.Equal(t, "2027-02-01 09:00:00", store.DateTime(rows[1].NextRun))
	require.Equal(t, []any{"[]", "critical", "skip"}, []any{rows[2].Payload, rows[2].Queue, rows[2].OverlapPolicy})

	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "record", Every: "1 hour"})
	require.ErrorIs(t, err, ErrScheduleExists)
	for _, bad := range []NewSchedule{
		{Handler: "x"},
		{Handler: "x", Every: "1 hour", Cron: "* * * * *"},
		{Handler: "x", Every: "every hour"},
		{Handler: "x", Cron: "0 9 * * MON"},
		{Handler: "x", Every: "1 hour", Overlap: "sometimes"},
		{Handler: "", Every: "1 hour"},
		{Handler: "x", Every: "1 hour", Payload: "[1,2]"},
	} {
		_, err := c.AddSchedule(ctx, bad)
		require.Error(t, err, "%+v", bad)
	}
	rows, err = c.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, rows, 3, "nothing written for bad input")
}

// TestSchedulePayloadIsReencodedAsThePluginDoes: the tick decodes the
// stored payload to a PHP array and encodes it again (PHP's outputs).
func TestSchedulePayloadIsReencodedAsThePluginDoes(t *testing.T) {
	t.Parallel()
	for stored, want := range map[string]string{
		`{}`:                              `[]`,
		`{"0":"a","1":"b"}`:               `["a","b"]`,
		`{"a":"x/y","\u00e9":1.0,"n":{}}`: `{"a":"x\/y","\u00e9":1,"n":[]}`,
		`garbage`:                         `[]`,
		`5`:                               `[]`,
		`"s"`:                             `[]`,
		`null`:                            `[]`,
		`[1,2]`:                           `[1,2]`,
		`{"5":"x"}`:                       `{"5":"x"}`,
		`{"source":"interval"}`:           `{"source":"interval"}`,
	} {
		require.Equal(t, want, string(scheduler.Payload(stored)), stored)
	}
}

// TestScheduleBufferWaitsForTheHandler pins the buffer policy's fix. The
// plugin's docs: "Do not dispatch now, but push next_run forward so the
// job is retried on the next tick"; its tick moves next_run a whole
// interval on instead (schedule_overlap.json snapshot 2), so the run is
// lost like skip's. Here the row stays due, untouched, and the first tick
// that finds the handler idle dispatches it.
func TestScheduleBufferWaitsForTheHandler(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(scheduleStart)
	c := newTestClient(t, func(cfg *Config) { cfg.Clock = clk })
	ctx := context.Background()
	_, err := c.AddSchedule(ctx, NewSchedule{Handler: "sync", Every: "5 minutes", Overlap: OverlapBuffer})
	require.NoError(t, err)
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "index", Every: "5 minutes", Overlap: OverlapSkip})
	require.NoError(t, err)
	running, err := c.Dispatch(ctx, "sync", nil)
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, "index", nil)
	require.NoError(t, err)

	clk.Advance(5 * time.Minute)
	res, err := c.TickSchedules(ctx)
	require.NoError(t, err)
	require.Equal(t, ScheduleTick{Skipped: 1, Waiting: 1}, res)
	buf, err := c.FindSchedule(ctx, "sync")
	require.NoError(t, err)
	require.Nil(t, buf.LastRun, "buffer writes nothing")
	require.Equal(t, scheduleStart.Add(5*time.Minute), buf.NextRun, "and stays due")
	skip, err := c.FindSchedule(ctx, "index")
	require.NoError(t, err)
	require.NotNil(t, skip.LastRun)
	require.Equal(t, clk.Now(), *skip.LastRun, "skip: last_run as if it ran")
	require.Equal(t, clk.Now().Add(5*time.Minute), skip.NextRun, "skip: next_run counts from the tick")

	clk.Advance(time.Minute)
	res, err = c.TickSchedules(ctx)
	require.NoError(t, err)
	require.Equal(t, ScheduleTick{Waiting: 1}, res, "still busy: still waiting; skip is not due")

	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["jobs"]+"` SET status = 'completed' WHERE id = ?", running.ID)
	require.NoError(t, err)
	clk.Advance(time.Minute)
	res, err = c.TickSchedules(ctx)
	require.NoError(t, err)
	require.Equal(t, ScheduleTick{Dispatched: 1}, res, "the buffered run goes once the handler is idle")
	buf, err = c.FindSchedule(ctx, "sync")
	require.NoError(t, err)
	require.NotNil(t, buf.LastRun)
	require.Equal(t, clk.Now(), *buf.LastRun)
	require.Equal(t, clk.Now().Add(5*time.Minute), buf.NextRun)
	require.Equal(t, 2, countHandler(t, c, "sync"))
	require.Equal(t, 1, countHandler(t, c, "index"), "skip dispatched nothing")
}

// Rows the plugin wrote with expressions `schedule add` refuses but the
// plugin's tick reads (a day name in a cron field, a weekday count, an
// interval that does not move forward or goes back) fire from the daemon
// with the next run the plugin would write; no PHP worker is needed. A
// row whose expression the plugin fails on too ("*/0": modulo by zero) or
// that PHP reads as a time zone ("5 m") is left as it is for PHP's tick,
// and the others still run.
func TestScheduleUnreadableRowIsLeftAlone(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(scheduleStart)
	c := newTestClient(t, func(cfg *Config) { cfg.Clock = clk })
	ctx := context.Background()
	tbl := c.store.Tables()["schedules"]
	due := store.DateTime(scheduleStart.Add(-time.Minute))
	rows := []struct{ handler, kind, expr, next string }{
		{"mon_cron", "cron", "0 9 * * MON", "2026-12-06 09:00:00"}, // MON is 0: Sunday, as PHP reads it
		{"weekday", "interval", "1 weekday", "2026-12-02 11:09:39"},
		{"zero", "interval", "0 minutes", "2026-12-01 11:09:39"}, // due again at the next tick
		{"ago", "interval", "2 hours ago", "2026-12-01 09:09:39"},
		{"zero_step", "cron", "*/0 * * * *", ""},
		{"zone", "interval", "5 m", ""},
	}
	for _, r := range rows {
		_, err := c.store.DB().Exec("INSERT INTO `"+tbl+"` (handler, payload, queue, expression, expression_type, next_run) VALUES (?, '[]', 'default', ?, ?, ?)", r.handler, r.expr, r.kind, due)
		require.NoError(t, err)
	}
	_, err := c.AddSchedule(ctx, NewSchedule{Handler: "good", Every: "1 minute"})
	require.NoError(t, err)
	clk.Advance(time.Minute)
	res, err := c.TickSchedules(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, res.Dispatched, "the good row and the four the plugin reads")
	var unreadable []string
	for _, u := range res.Unreadable {
		unreadable = append(unreadable, u.Handler)
		if u.Handler == "zero_step" {
			require.Contains(t, u.Err, "Modulo by zero")
		}
	}
	require.ElementsMatch(t, []string{"zero_step", "zone"}, unreadable)
	for _, r := range rows {
		row, err := c.FindSchedule(ctx, r.handler)
		require.NoError(t, err)
		if r.next == "" {
			require.Nil(t, row.LastRun, r.handler)
			require.Equal(t, due, store.DateTime(row.NextRun), "%s untouched, for PHP's workers", r.handler)
			require.Equal(t, 0, countHandler(t, c, r.handler))
			continue
		}
		require.NotNil(t, row.LastRun, r.handler)
		require.Equal(t, "2026-12-01 11:09:39", store.DateTime(*row.LastRun), r.handler)
		require.Equal(t, r.next, store.DateTime(row.NextRun), r.handler)
		require.Equal(t, 1, countHandler(t, c, r.handler), r.handler)
	}
	// The row that does not move forward fires on every tick, as the
	// plugin's does.
	clk.Advance(time.Minute)
	_, err = c.TickSchedules(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, countHandler(t, c, "zero"))
	require.Equal(t, 2, countHandler(t, c, "ago"))
	require.Equal(t, 1, countHandler(t, c, "weekday"))
}

func countHandler(t *testing.T, c *Client, handler string) int {
	t.Helper()
	var n int
	require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE handler = ?", handler))
	return n
}

// pluginTick runs the statements of the plugin's Scheduler::tick on its own
// connection, as PHP's PDO does (REPEATABLE READ, one transaction for the
// whole tick, FOR UPDATE SKIP LOCKED), with now for NOW() and PHP's clock.
func pluginTick(ctx context.Context, db *sqlx.DB, tables store.Tables, now time.Time) (int, error) {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	var rows []store.ScheduleRow
	if err := tx.SelectContext(ctx, &rows, "SELECT * FROM `"+tables["schedules"]+"` WHERE enabled = 1 AND next_run <= ? FOR UPDATE SKIP LOCKED", store.DateTime(now)); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		expr, err := schedule.ParseStored(schedule.Kind(r.ExpressionType), r.Expression)
		if err != nil {
			return 0, err
		}
		next, _ := expr.Next(now)
		if r.OverlapPolicy != "allow" {
			var active int
			if err := tx.GetContext(ctx, &active, "SELECT COUNT(*) FROM `"+tables["jobs"]+"` WHERE handler = ? AND status IN ('pending', 'processing')", r.Handler); err != nil {
				return 0, err
			}
			if active > 0 {
				q := "UPDATE `" + tables["schedules"] + "` SET last_run = ?, next_run = ? WHERE id = ?"
				args := []any{store.DateTime(now), store.DateTime(next), r.ID}
				if r.OverlapPolicy == "buffer" {
					q, args = "UPDATE `"+tables["schedules"]+"` SET next_run = ? WHERE id = ?", args[1:]
				}
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					return 0, err
				}
				continue
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO `"+tables["jobs"]+"` (queue, handler, payload, priority, status, max_attempts, available_at) VALUES (?, ?, ?, 0, 'pending', 3, ?)",
			r.Queue, r.Handler, string(scheduler.Payload(r.Payload)), store.DateTime(now)); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE `"+tables["schedules"]+"` SET last_run = ?, next_run = ? WHERE id = ?", store.DateTime(now), store.DateTime(next), r.ID); err != nil {
			return 0, err
		}
		n++
	}
	return n, tx.Commit()
}

// TestScheduleRunsDispatchOnceAcrossDaemonsAndPHP: four daemons and two
// PHP-style ticks tick one table at the same moment, minute after minute.
// Every due run must give exactly one job: allow rows one per minute, and
// skip and buffer rows one in all (their first job stays pending).
func TestScheduleRunsDispatchOnceAcrossDaemonsAndPHP(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(scheduleStart)
	c := newTestClient(t, func(cfg *Config) { cfg.Clock = clk })
	ctx := context.Background()
	daemons := []*Client{c}
	for i := 0; i < 3; i++ {
		cfg := c.Config()
		other, err := Open(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		daemons = append(daemons, other)
	}
	php, err := store.Open(ctx, c.Config().DSN, 4, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = php.Close() })

	allow := []string{"a", "b", "c", "d"}
	for _, h := range allow {
		_, err := c.AddSchedule(ctx, NewSchedule{Handler: h, Every: "1 minute", Payload: map[string]any{"h": h}})
		require.NoError(t, err)
	}
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "cron", Cron: "* * * * *"})
	require.NoError(t, err)
	allow = append(allow, "cron")
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "skip", Every: "1 minute", Overlap: OverlapSkip})
	require.NoError(t, err)
	_, err = c.AddSchedule(ctx, NewSchedule{Handler: "buffer", Every: "1 minute", Overlap: OverlapBuffer})
	require.NoError(t, err)

	const rounds = 25
	var phpFailures, phpDispatched int
	for round := 0; round < rounds; round++ {
		clk.Advance(time.Minute)
		now := clk.Now()
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, len(daemons)+2)
		for _, d := range daemons {
			wg.Add(1)
			go func(d *Client) {
				defer wg.Done()
				<-start
				_, err := d.TickSchedules(ctx)
				errs <- err
			}(d)
		}
		var mu sync.Mutex
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n, err := pluginTick(ctx, php, c.store.Tables(), now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					// A deadlock rolls the PHP tick back: nothing dispatched.
					require.True(t, store.Transient(err), "PHP tick: %v", err)
					phpFailures++
					return
				}
				phpDispatched += n
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
		// A run a failed PHP tick held and rolled back is still due: the
		// next tick takes it, once.
		_, err := c.TickSchedules(ctx)
		require.NoError(t, err)
		due, err := c.DueSchedules(ctx)
		require.NoError(t, err)
		for _, d := range due {
			require.Equal(t, "buffer", d.Handler, "round %d: only a buffered run stays due", round)
		}
	}
	for _, h := range allow {
		require.Equal(t, rounds, countHandler(t, c, h), "%s: one job per minute", h)
	}
	require.Equal(t, 1, countHandler(t, c, "skip"))
	require.Equal(t, 1, countHandler(t, c, "buffer"))
	require.NotZero(t, phpDispatched, "the PHP ticks took part")
	t.Logf("PHP ticks dispatched %d jobs; %d rolled back on a deadlock", phpDispatched, phpFailures)
}

// TestWorkerTicksSchedules: the scheduler service inside the worker
// enqueues a due schedule on the clock it is given, and the worker runs
// the job; with a negative interval there is no scheduler.
func TestWorkerTicksSchedules(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(scheduleStart)
	c := newTestClient(t, func(cfg *Config) { cfg.Clock = clk; cfg.ScheduleInterval = 20 * time.Millisecond })
	ctx := context.Background()
	_, err := c.AddSchedule(ctx, NewSchedule{Handler: "tick", Every: "1 hour", Payload: map[string]any{"n": 1}})
	require.NoError(t, err)
	got := make(chan string, 10)
	reg := NewRegistry()
	reg.HandleFunc("tick", func(_ context.Context, j *Job) error {
		got <- string(j.RawPayload)
		return nil
	})
	w0, err := c.NewWorker(reg)
	require.NoError(t, err)
	w0.scheduler.TestSignals.Ticked.Init()
	require.NoError(t, w0.Start(ctx))
	t.Cleanup(func() { _ = w0.Stop(context.Background()) })
	tick, ok := w0.scheduler.TestSignals.Ticked.Wait(10 * time.Second)
	require.True(t, ok, "no tick at start")
	require.Zero(t, tick.Dispatched, "nothing dispatched before the schedule was due")
	clk.Advance(time.Hour)
	select {
	case p := <-got:
		require.Equal(t, `{"n":1}`, p)
	case <-time.After(10 * time.Second):
		t.Fatal("the due schedule was not enqueued")
	}
	row, err := c.FindSchedule(ctx, "tick")
	require.NoError(t, err)
	require.Equal(t, clk.Now().Add(time.Hour), row.NextRun)
	require.Equal(t, 0, countLogRowsWithoutJob(t, c), "the tick writes no log rows")

	off := newTestClient(t, func(cfg *Config) { cfg.ScheduleInterval = -1 })
	w, err := off.NewWorker(reg)
	require.NoError(t, err)
	require.Nil(t, w.scheduler)
	w2, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NotNil(t, w2.scheduler)
	require.Equal(t, 20*time.Millisecond, w2.scheduler.Interval())
	def := Config{}
	require.NoError(t, def.Validate())
	require.Equal(t, DefaultScheduleInterval, def.ScheduleInterval, "60 s, as the plugin's worker loop")
}

func countLogRowsWithoutJob(t *testing.T, c *Client) int {
	t.Helper()
	var n int
	require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["logs"]+"` WHERE event NOT IN ('started', 'completed')"))
	return n
}
