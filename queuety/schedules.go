package queuety

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuety-go/queuety/internal/schedule"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	"github.com/queuety-go/queuety/queuety/internal/scheduler"
	store "github.com/queuety-go/queuety/sql"
)

// Schedule is one row of the schedules table.
type Schedule = rowview.Schedule

// Schedule errors.
var (
	ErrScheduleNotFound = store.ErrScheduleNotFound
	ErrScheduleExists   = store.ErrScheduleExists
)

// Overlap policies of a schedule: what a tick does while the handler still
// has a pending or processing job.
const (
	OverlapAllow  = string(schedule.Allow)  // dispatch anyway (the default)
	OverlapSkip   = string(schedule.Skip)   // no job; the schedule moves on to its next run
	OverlapBuffer = string(schedule.Buffer) // no job; the run stays due until the handler is idle
)

// NewSchedule is a schedule to add, as the plugin's
// Queuety::schedule($handler, $payload)->every(…)|cron(…)->on_queue(…)->overlap(…).
type NewSchedule struct {
	Handler string
	// Payload is what every run's job gets (see Dispatch for the forms it
	// takes); nil is an empty payload.
	Payload any
	// Queue is the jobs' queue; "" is "default".
	Queue string
	// Every is an interval ("10 minutes", "1 hour 30 minutes"), counted
	// from each tick; or Cron a 5-field cron expression ("0 3 * * 1-5"),
	// in UTC, day-of-month and day-of-week both required. Set one.
	Every, Cron string
	// Overlap is allow (""), skip or buffer.
	Overlap string
}

// CheckSchedule validates a schedule without writing it and returns its
// parsed expression, so a command line can reject bad input before
// connecting.
func CheckSchedule(n NewSchedule) error {
	_, _, err := checkSchedule(n)
	return err
}

func checkSchedule(n NewSchedule) (schedule.Expr, schedule.Policy, error) {
	if err := store.CheckName(store.HandlerName, n.Handler); err != nil {
		return schedule.Expr{}, "", err
	}
	if n.Queue != "" {
		if err := ValidateQueue(n.Queue); err != nil {
			return schedule.Expr{}, "", err
		}
	}
	var kind schedule.Kind
	var text string
	switch {
	case n.Every != "" && n.Cron != "":
		return schedule.Expr{}, "", errors.New("an interval and a cron expression: set one")
	case n.Every != "":
		kind, text = schedule.Interval, n.Every
	case n.Cron != "":
		kind, text = schedule.Cron, n.Cron
	default:
		return schedule.Expr{}, "", errors.New("no interval or cron expression: set one")
	}
	if len(text) > 255 {
		return schedule.Expr{}, "", fmt.Errorf("expression: longer than 255 characters")
	}
	expr, err := schedule.Parse(kind, text)
	if err != nil {
		return expr, "", err
	}
	policy, err := schedule.ParsePolicy(n.Overlap)
	return expr, policy, err
}

// AddSchedule writes a schedule as the plugin's Scheduler::add does: the
// payload encoded as PHP would, next_run the first run after now. It
// returns the schedule's id; ErrScheduleExists when the handler has one.
func (c *Client) AddSchedule(ctx context.Context, n NewSchedule) (int64, error) {
	expr, policy, err := checkSchedule(n)
	if err != nil {
		return 0, err
	}
	body, err := EncodePayload(n.Payload)
	if err != nil {
		return 0, err
	}
	next, err := expr.Next(c.store.Now())
	if err != nil {
		return 0, err
	}
	queue := n.Queue
	if queue == "" {
		queue = DefaultQueue
	}
	return c.store.AddSchedule(ctx, store.NewSchedule{
		Handler: n.Handler, Payload: body, Queue: queue, Expression: expr.String(),
		ExpressionType: string(expr.Kind()), OverlapPolicy: string(policy), NextRun: next,
	})
}

// Schedules lists every schedule in id order.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	rows, err := c.store.ListSchedules(ctx)
	return rowview.Schedules(rows), err
}

// FindSchedule returns the schedule of a handler, or ErrScheduleNotFound.
func (c *Client) FindSchedule(ctx context.Context, handler string) (*Schedule, error) {
	row, err := c.store.FindSchedule(ctx, handler)
	if err != nil {
		return nil, err
	}
	s := rowview.ScheduleOf(row)
	return &s, nil
}

// RemoveSchedule deletes the schedule of a handler and says whether there
// was one.
func (c *Client) RemoveSchedule(ctx context.Context, handler string) (bool, error) {
	return c.store.RemoveSchedule(ctx, handler)
}

// DueSchedules lists the enabled schedules whose next run has come.
func (c *Client) DueSchedules(ctx context.Context) ([]Schedule, error) {
	rows, err := c.store.ListSchedules(ctx)
	if err != nil {
		return nil, err
	}
	now := c.store.Now()
	var due []Schedule
	for i, r := range rows {
		if r.Enabled && !r.NextRun.After(now) {
			due = append(due, rowview.ScheduleOf(&rows[i]))
		}
	}
	return due, nil
}

// ScheduleTick is what one tick did.
type ScheduleTick = scheduler.Result

// UnreadableSchedule is a due row a tick left alone, and why.
type UnreadableSchedule = scheduler.Unreadable

// TickSchedules runs the plugin's Scheduler::tick once: each enabled row
// whose next_run has come gets one plain job (its payload and queue,
// priority 0, max_attempts 3, nothing from the handler's class, no log
// row), last_run = now and next_run counted from now, however late the
// tick is. A row whose overlap policy is skip or buffer and whose handler
// has a pending or processing job gets no job: skip moves last_run and
// next_run on, buffer leaves the row due so a later tick runs it once the
// handler is idle (the plugin moves next_run a whole interval on, against
// its own docs).
//
// Each row is one transaction that locks it (skipping rows another tick
// holds) and commits its job with its new next_run: however many daemons
// and PHP workers tick the table, each due run is dispatched once. A row
// that fails is reported and the others still run; the error returned
// joins the failures.
func (c *Client) TickSchedules(ctx context.Context) (ScheduleTick, error) {
	return scheduler.Tick(ctx, c.store, &scheduler.TickParams{Now: c.store.Now(),
		Priority: int(PriorityLow), MaxAttempts: DefaultMaxAttempts})
}
