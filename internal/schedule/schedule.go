// Package schedule reads the expressions of Queuety's schedules table and
// computes their next run the way the plugin's Scheduler does: an interval
// ("10 minutes") is added to the time of the tick, and a 5-field cron
// expression gives the next matching minute after it, in UTC, with the
// day-of-month and day-of-week fields both required to match.
package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Kind is schedules.expression_type.
type Kind string

// The expression types of the plugin's ExpressionType enum.
const (
	Interval Kind = "interval"
	Cron     Kind = "cron"
)

// Policy is schedules.overlap_policy: what a tick does while the handler
// still has a pending or processing job.
type Policy string

// The plugin's OverlapPolicy values.
const (
	Allow  Policy = "allow"  // dispatch anyway (the default)
	Skip   Policy = "skip"   // no job; last_run and next_run move on as if it ran
	Buffer Policy = "buffer" // no job; the run waits, due, for the first tick with none active
)

// ParsePolicy checks an overlap policy's name; "" is allow.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return Allow, nil
	case Allow, Skip, Buffer:
		return p, nil
	}
	return "", fmt.Errorf("overlap policy %q: want allow, skip or buffer", s)
}

// Expr is a parsed schedule expression.
type Expr struct {
	kind     Kind
	raw      string
	interval interval
	cron     cronRule
}

// Parse reads expression as kind, as `schedule add` and the Go API take
// it. It refuses what the plugin would fail on (PHP's modify() returning
// false, a cron field count other than 5), what never moves forward, and
// the forms where the plugin and a cron reader disagree (see checkCron),
// so a schedule added here means what it says.
func Parse(kind Kind, expression string) (Expr, error) {
	return parse(kind, expression, false)
}

// ParseStored reads a schedules row as the plugin's tick reads it: every
// cron expression of five fields, read as CronExpression reads it ("MON"
// and "?" are 0, "5/10" never matches), and every interval the PHP
// relative formats give a time for that we compute (see parseInterval),
// even one that moves time back (it then fires on every tick, as under the
// plugin). What it refuses the plugin either fails on too or reads in a
// way not computed here; such a row is left to PHP's tick.
func ParseStored(kind Kind, expression string) (Expr, error) {
	return parse(kind, expression, true)
}

func parse(kind Kind, expression string, stored bool) (Expr, error) {
	e := Expr{kind: kind, raw: expression}
	var err error
	switch kind {
	case Interval:
		e.interval, err = parseInterval(expression, stored)
	case Cron:
		if !stored {
			err = checkCron(expression)
		}
		if err == nil {
			e.cron, err = parseCronRule(expression)
		}
	default:
		return e, fmt.Errorf("expression type %q: want interval or cron", kind)
	}
	if err != nil {
		return e, fmt.Errorf("%s expression %q: %w", kind, expression, err)
	}
	return e, nil
}

// Kind returns the expression's type.
func (e Expr) Kind() Kind { return e.kind }

// String returns the expression as written.
func (e Expr) String() string { return e.raw }

// Next is the run after from, at whole seconds as a DATETIME keeps it: for
// an interval from plus the interval (PHP's modify('+'.$expression)), for
// cron the first matching minute after from's minute. The plugin computes
// next_run from the time of the tick, never from the last next_run, so a
// tick hours late gives one run, not one per missed period.
func (e Expr) Next(from time.Time) (time.Time, error) {
	from = from.UTC().Truncate(time.Second)
	switch e.kind {
	case Interval:
		return e.interval.after(from).Truncate(time.Second), nil
	case Cron:
		t, err := e.cron.next(from)
		if err != nil {
			return time.Time{}, fmt.Errorf("cron expression %q: %w", e.raw, err)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("expression type %q: want interval or cron", e.kind)
}
