package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/schedule"
	store "github.com/queuety-go/queuety/sql"
)

// Result is what one tick did.
type Result struct {
	Dispatched int `json:"dispatched"` // jobs inserted
	Skipped    int `json:"skipped"`    // runs skipped by the skip policy
	Waiting    int `json:"waiting"`    // runs the buffer policy keeps due
	// Unreadable are due rows whose expression we cannot compute; they are
	// left as they are, for the plugin's own workers.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Unreadable is a due row a tick left alone, and why.
type Unreadable struct {
	ID      int64  `json:"id"`
	Handler string `json:"handler"`
	Err     string `json:"error"`
}

// Store is what a tick needs of the storage layer.
type Store interface {
	DueScheduleIDs(ctx context.Context, now time.Time, afterID int64, limit int) ([]int64, error)
	TickSchedule(ctx context.Context, id int64, now time.Time,
		decide func(row *store.ScheduleRow, active int) (store.ScheduleDecision, error)) (store.ScheduleTick, error)
}

// TickParams is one tick's input.
type TickParams struct {
	// Now is the time next_run is compared with and counted from (the
	// database's clock as the Client reads it).
	Now time.Time
	// Priority and MaxAttempts are every dispatched job's: the plugin's
	// Scheduler inserts priority 0, max_attempts 3.
	Priority, MaxAttempts int
}

// batch is how many due ids one read of a tick takes.
const batch = 100

// Tick runs the plugin's Scheduler::tick once (see Client.TickSchedules):
// each row is one transaction; a row that fails is reported and the others
// still run; the error returned joins the failures.
func Tick(ctx context.Context, st Store, p *TickParams) (Result, error) {
	var res Result
	var errs []error
	after := int64(0)
	for {
		ids, err := st.DueScheduleIDs(ctx, p.Now, after, batch)
		if err != nil {
			return res, errors.Join(append(errs, err)...)
		}
		for _, id := range ids {
			after = id
			t, err := st.TickSchedule(ctx, id, p.Now, func(row *store.ScheduleRow, active int) (store.ScheduleDecision, error) {
				return decide(row, active, p)
			})
			var bad *unreadableError
			switch {
			case errors.As(err, &bad):
				res.Unreadable = append(res.Unreadable, Unreadable{ID: id, Handler: bad.handler, Err: bad.err.Error()})
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
		if len(ids) < batch {
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

// decide is the plugin's tick for one locked due row.
func decide(row *store.ScheduleRow, active int, p *TickParams) (store.ScheduleDecision, error) {
	expr, err := schedule.ParseStored(schedule.Kind(row.ExpressionType), row.Expression)
	if err != nil {
		return store.ScheduleDecision{}, &unreadableError{row.Handler, err}
	}
	next, err := expr.Next(p.Now)
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
		Queue: row.Queue, Handler: row.Handler, Payload: Payload(row.Payload),
		Priority: p.Priority, MaxAttempts: p.MaxAttempts, CostUnits: 1,
	}}, nil
}

// Payload is the job payload of a schedule's stored one, as the plugin
// makes it: json_decode($payload, true), anything but an array read as an
// empty one, and json_encode again, so {} becomes [] and {"0":"a"} ["a"].
func Payload(stored string) []byte {
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
