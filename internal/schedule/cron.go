package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronFields are the fields' value sets as robfig/cron's bit masks (bit v
// set: value v matches).
type cronFields struct {
	minute, hour, dom, month, dow uint64
}

// fiveFields reads exactly five fields, without descriptors (@daily) or
// seconds: the plugin splits on blanks and wants five.
var fiveFields = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// parseCron reads a 5-field expression with robfig/cron after checking the
// forms where the plugin's CronExpression reads it differently:
//   - names (MON, JAN) and "?": PHP casts them to the integer 0, so "MON"
//     is Sunday there; refused.
//   - "N/step" without a range: robfig reads N-max/step, the plugin never
//     matches it; refused.
//   - day-of-week 7: the plugin takes a lone 7 as Sunday and ends a range
//     at 6 ("5-7" is Friday and Saturday); robfig refuses 7, so it is
//     rewritten to what the plugin means.
//
// Day-of-month and day-of-week are matched by next, both required: robfig
// (and Vixie cron) take either when both are restricted.
func parseCron(s string) (cronFields, error) {
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return cronFields{}, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		parts := strings.Split(f, ",")
		for j, p := range parts {
			if strings.Trim(p, "0123456789*-/") != "" {
				return cronFields{}, fmt.Errorf("field %d %q: only numbers, *, ranges (1-5), steps (*/15) and lists (1,3,5)", i+1, f)
			}
			if rng, _, ok := strings.Cut(p, "/"); ok && rng != "*" && !strings.Contains(rng, "-") {
				return cronFields{}, fmt.Errorf("field %d %q: a step needs * or a range before it (*/%s, 0-59/%s)", i+1, f, p[len(rng)+1:], p[len(rng)+1:])
			}
			if i == 4 {
				parts[j] = sundaySeven(p)
			}
		}
		fields[i] = strings.Join(parts, ",")
	}
	sched, err := fiveFields.Parse(strings.Join(fields, " "))
	if err != nil {
		return cronFields{}, err
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return cronFields{}, errors.New("not a field schedule")
	}
	return cronFields{minute: spec.Minute, hour: spec.Hour, dom: spec.Dom, month: spec.Month, dow: spec.Dow}, nil
}

// sundaySeven rewrites a day-of-week item with 7 the way the plugin reads
// it: a lone 7 is 0, a range ending at 7 ends at 6 (its values run 0-6).
func sundaySeven(p string) string {
	rng, step, hasStep := strings.Cut(p, "/")
	switch {
	case rng == "7":
		rng = "0"
	case strings.HasSuffix(rng, "-7"):
		rng = strings.TrimSuffix(rng, "-7") + "-6"
	}
	if hasStep {
		return rng + "/" + step
	}
	return rng
}

func has(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }

// next walks forward from the minute after from, as the plugin does: a
// month that does not match skips to the next month, a day to the next
// day, an hour to the next hour, a minute to the next minute. It gives up
// after a year, as the plugin does (which then fails the add or the tick).
func (c cronFields) next(from time.Time) (time.Time, bool) {
	t := from.UTC().Truncate(time.Minute).Add(time.Minute)
	limit := from.UTC().AddDate(1, 0, 0)
	for !t.After(limit) {
		switch {
		case !has(c.month, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !has(c.dom, t.Day()) || !has(c.dow, int(t.Weekday())):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !has(c.hour, t.Hour()):
			t = t.Truncate(time.Hour).Add(time.Hour)
		case !has(c.minute, t.Minute()):
			t = t.Add(time.Minute)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}
