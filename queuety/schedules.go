package queuety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/schedule"
	store "github.com/queuety-go/queuety/sql"
)

// Schedule is one row of the schedules table.
type Schedule = store.ScheduleRow

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
	return c.store.ListSchedules(ctx)
}

// FindSchedule returns the schedule of a handler, or ErrScheduleNotFound.
func (c *Client) FindSchedule(ctx context.Context, handler string) (*Schedule, error) {
	return c.store.FindSchedule(ctx, handler)
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
	for _, r := range rows {
		if r.Enabled && !r.NextRun.After(now) {
			due = append(due, r)
		}
	}
	return due, nil
}

// ScheduleTick is what one tick did.
type ScheduleTick struct {
	Dispatched int `json:"dispatched"` // jobs inserted
	Skipped    int `json:"skipped"`    // runs skipped by the skip policy
	Waiting    int `json:"waiting"`    // runs the buffer policy keeps due
	// Unreadable are due rows whose expression we cannot compute; they are
	// left as they are, for the plugin's own workers.
	Unreadable []UnreadableSchedule `json:"unreadable,omitempty"`
}

// UnreadableSchedule is a due row a tick left alone, and why.
type UnreadableSchedule struct {
	ID      int64  `json:"id"`
	Handler string `json:"handler"`
	Err     string `json:"error"`
}

// scheduleBatch is how many due ids one read of a tick takes.
const scheduleBatch = 100

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
	var res ScheduleTick
	var errs []error
	now := c.store.Now()
	after := int64(0)
	for {
		ids, err := c.store.DueScheduleIDs(ctx, now, after, scheduleBatch)
		if err != nil {
			return res, errors.Join(append(errs, err)...)
		}
		for _, id := range ids {
			after = id
			t, err := c.store.TickSchedule(ctx, id, now, func(row *store.ScheduleRow, active int) (store.ScheduleDecision, error) {
				return decideRun(row, active, now)
			})
			var bad *unreadableError
			switch {
			case errors.As(err, &bad):
				res.Unreadable = append(res.Unreadable, UnreadableSchedule{ID: id, Handler: bad.handler, Err: bad.err.Error()})
				continue
			case err != nil:
				errs = append(errs, err)
				if ctx.Err() != nil || store.ConnectionLost(err) {
					return res, errors.Join(errs...)
				}
				continue
			case t.Row == nil:
				continue // another tick ran it
			}
			switch t.Action {
			case store.ScheduleDispatch:
				res.Dispatched++
			case store.ScheduleSkip:
				res.Skipped++
			case store.ScheduleWait:
				res.Waiting++
			}
		}
		if len(ids) < scheduleBatch {
			return res, errors.Join(errs...)
		}
	}
}

// unreadableError is a row whose expression cannot be computed.
type unreadableError struct {
	handler string
	err     error
}

func (e *unreadableError) Error() string { return e.err.Error() }

// decideRun is the plugin's tick for one locked due row.
func decideRun(row *store.ScheduleRow, active int, now time.Time) (store.ScheduleDecision, error) {
	expr, err := schedule.ParseStored(schedule.Kind(row.ExpressionType), row.Expression)
	if err != nil {
		return store.ScheduleDecision{}, &unreadableError{row.Handler, err}
	}
	next, err := expr.Next(now)
	if err != nil {
		return store.ScheduleDecision{}, &unreadableError{row.Handler, err}
	}
	// The column is an ENUM of the three; the plugin reads anything else
	// as allow.
	policy, err := schedule.ParsePolicy(row.OverlapPolicy)
	if err != nil {
		policy = schedule.Allow
	}
	if active > 0 {
		switch policy {
		case schedule.Skip:
			return store.ScheduleDecision{Action: store.ScheduleSkip, NextRun: next}, nil
		case schedule.Buffer:
			return store.ScheduleDecision{Action: store.ScheduleWait}, nil
		}
	}
	return store.ScheduleDecision{Action: store.ScheduleDispatch, NextRun: next, Job: store.InsertJob{
		Queue: row.Queue, Handler: row.Handler, Payload: schedulePayload(row.Payload),
		Priority: int(PriorityLow), MaxAttempts: DefaultMaxAttempts, CostUnits: 1,
	}}, nil
}

// schedulePayload is the job payload of a schedule's stored one, as the
// plugin makes it: json_decode($payload, true), anything but an array
// read as an empty one, and json_encode again, so {} becomes [] and
// {"0":"a"} ["a"].
func schedulePayload(stored string) []byte {
	v, err := phpjson.DecodeString(stored)
	if err != nil || (v.Kind() != phpjson.KindObject && v.Kind() != phpjson.KindList) {
		return []byte("[]")
	}
	b, err := phpjson.Encode(v)
	if err != nil {
		return []byte("[]")
	}
	return b
}
