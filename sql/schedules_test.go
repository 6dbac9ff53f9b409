package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScheduleRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.s.Now().Add(10 * time.Minute)
	id, err := e.s.AddSchedule(e.ctx, NewSchedule{Handler: "record", Payload: []byte(`{"source":"interval"}`),
		Queue: "default", Expression: "10 minutes", ExpressionType: "interval", OverlapPolicy: "allow", NextRun: next})
	require.NoError(t, err)
	_, err = e.s.AddSchedule(e.ctx, NewSchedule{Handler: "record", Payload: []byte(`[]`), Queue: "default",
		Expression: "1 hour", ExpressionType: "interval", OverlapPolicy: "allow", NextRun: next})
	require.ErrorIs(t, err, ErrScheduleExists)

	got, err := e.s.FindSchedule(e.ctx, "record")
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
	require.Equal(t, `{"source":"interval"}`, got.Payload)
	require.Equal(t, next, got.NextRun)
	require.False(t, got.LastRun.Valid)
	require.True(t, got.Enabled, "enabled keeps its default 1")
	require.Equal(t, "allow", got.OverlapPolicy)

	rows, err := e.s.ListSchedules(e.ctx)
	require.NoError(t, err)
	require.Len(t, rows, 1)

	ok, err := e.s.RemoveSchedule(e.ctx, "record")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = e.s.RemoveSchedule(e.ctx, "record")
	require.NoError(t, err)
	require.False(t, ok)
	_, err = e.s.FindSchedule(e.ctx, "record")
	require.ErrorIs(t, err, ErrScheduleNotFound)
}

func TestTickScheduleActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.s.Now()
	for _, h := range []string{"a", "b", "c"} {
		e.exec(`INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run, overlap_policy)
			VALUES (?, '[]', 'default', '1 minute', 'interval', ?, 'skip')`, h, DateTime(now.Add(-time.Minute)))
	}
	e.exec(`INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run) VALUES ('later', '[]', 'default', '1 minute', 'interval', ?)`, DateTime(now.Add(time.Minute)))
	e.exec(`INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run, enabled) VALUES ('off', '[]', 'default', '1 minute', 'interval', ?, 0)`, DateTime(now.Add(-time.Minute)))
	e.exec(`INSERT INTO {jobs} (queue, handler, payload, status, available_at) VALUES ('default', 'b', '[]', 'processing', ?)`, DateTime(now))

	ids, err := e.s.DueScheduleIDs(e.ctx, now, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, ids, "not the future row, not the disabled one")
	ids, err = e.s.DueScheduleIDs(e.ctx, now, 1, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, ids, "paged by id")

	actives := map[string]int{}
	decide := func(action ScheduleAction) func(*ScheduleRow, int) (ScheduleDecision, error) {
		return func(r *ScheduleRow, active int) (ScheduleDecision, error) {
			actives[r.Handler] = active
			return ScheduleDecision{Action: action, NextRun: now.Add(time.Minute),
				Job: InsertJob{Queue: r.Queue, Handler: r.Handler, Payload: []byte(r.Payload), MaxAttempts: 3, CostUnits: 1}}, nil
		}
	}
	res, err := e.s.TickSchedule(e.ctx, 1, now, decide(ScheduleDispatch))
	require.NoError(t, err)
	require.NotNil(t, res.Row)
	require.NotZero(t, res.JobID)
	res, err = e.s.TickSchedule(e.ctx, 2, now, decide(ScheduleSkip))
	require.NoError(t, err)
	require.Zero(t, res.JobID)
	res, err = e.s.TickSchedule(e.ctx, 3, now, decide(ScheduleWait))
	require.NoError(t, err)
	require.Equal(t, ScheduleWait, res.Action)
	require.Equal(t, map[string]int{"a": 0, "b": 1, "c": 0}, actives, "the overlap count is of pending and processing jobs of the handler")

	res, err = e.s.TickSchedule(e.ctx, 1, now, decide(ScheduleDispatch))
	require.NoError(t, err)
	require.Nil(t, res.Row, "no longer due")
	res, err = e.s.TickSchedule(e.ctx, 4, now, decide(ScheduleDispatch))
	require.NoError(t, err)
	require.Nil(t, res.Row, "not due")

	require.Equal(t, 1, e.count(`SELECT COUNT(*) FROM {jobs} WHERE handler = 'a' AND status = 'pending' AND priority = 0 AND max_attempts = 3`))
	require.Equal(t, 1, e.count(`SELECT COUNT(*) FROM {jobs}  WHERE handler = 'b'`), "only the running one")
	for h, wantLast := range map[string]bool{"a": true, "b": true, "c": false} {
		row, err := e.s.FindSchedule(e.ctx, h)
		require.NoError(t, err)
		require.Equal(t, wantLast, row.LastRun.Valid, h)
		if wantLast {
			require.Equal(t, now, row.LastRun.Time, h)
			require.Equal(t, now.Add(time.Minute), row.NextRun, h)
		} else {
			require.Equal(t, now.Add(-time.Minute), row.NextRun, "%s: wait writes nothing", h)
		}
	}
}
