package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// interval is a sum of PHP relative-time items ("1 hour 30 minutes").
type interval struct {
	years, months, days int
	clock               time.Duration
	// A stored row may instead hold one item that is no sum (see
	// readStoredItem): a count of weekdays ("3 weekdays"), or the Nth
	// day of a name ("1 monday").
	weekdays    int
	hasWeekdays bool
	dayName     time.Weekday
	dayCount    int
	hasDayName  bool
}

// intervalUnits are the units of PHP's relative formats we accept, by
// name as PHP spells them (case does not matter). Sub-second units, day
// names and "weekday" are left out: PHP's results for them ("+1 monday" is
// the next Monday, "+5 m" a military time zone that moves nothing) are not
// intervals.
var intervalUnits = map[string]func(n int, iv *interval){
	"sec": addClock(time.Second), "secs": addClock(time.Second),
	"second": addClock(time.Second), "seconds": addClock(time.Second),
	"min": addClock(time.Minute), "mins": addClock(time.Minute),
	"minute": addClock(time.Minute), "minutes": addClock(time.Minute),
	"hour": addClock(time.Hour), "hours": addClock(time.Hour),
	"day": addDays(1), "days": addDays(1),
	"week": addDays(7), "weeks": addDays(7),
	"fortnight": addDays(14), "fortnights": addDays(14),
	"month": func(n int, iv *interval) { iv.months += n }, "months": func(n int, iv *interval) { iv.months += n },
	"year": func(n int, iv *interval) { iv.years += n }, "years": func(n int, iv *interval) { iv.years += n },
}

func addClock(unit time.Duration) func(int, *interval) {
	return func(n int, iv *interval) { iv.clock += time.Duration(n) * unit }
}

func addDays(k int) func(int, *interval) {
	return func(n int, iv *interval) { iv.days += n * k }
}

// parseInterval reads what the plugin hands to DateTimeImmutable::modify()
// after a "+": items of an optional sign, a whole number and a unit,
// separated by blanks or commas ("10 minutes", "1 hour, 30 mins", "2weeks").
// PHP returns false for "hour" or "every hour" and the plugin then fails,
// so a number is required here too. The sum must move time forward: PHP
// takes "0 minutes" or "-5 minutes", and the schedule then fires on every
// tick.
//
// stored reads a row already in the table, as the plugin's tick reads it:
// then a sum that moves time back or not at all is taken (PHP takes it,
// and the schedule fires on every tick), so are "ago" (it negates the
// items before it), sub-second units, and a lone "N weekdays" or "N
// <day name>" item. What PHP reads as a time zone or not at all is still
// refused, and such a row is left to PHP's tick.
func parseInterval(s string, stored bool) (interval, error) {
	if stored {
		if iv, ok := readStoredItem(s); ok {
			return iv, nil
		}
	}
	var iv interval
	rest := strings.TrimSpace(s)
	if rest == "" {
		return iv, errors.New("empty; want a number and a unit, e.g. \"10 minutes\"")
	}
	items := 0
	for rest != "" {
		neg := false
		for rest != "" && (rest[0] == '+' || rest[0] == '-') {
			neg = neg != (rest[0] == '-')
			rest = strings.TrimLeft(rest[1:], " \t")
		}
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 {
			return iv, fmt.Errorf("%q: want a whole number before the unit, e.g. \"10 minutes\"", rest)
		}
		n, err := strconv.Atoi(rest[:digits])
		if err != nil || n > 1<<31 {
			return iv, fmt.Errorf("%q: number too large", rest[:digits])
		}
		if neg {
			n = -n
		}
		rest = strings.TrimLeft(rest[digits:], " \t")
		end := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) })
		if end < 0 {
			end = len(rest)
		}
		unit := strings.ToLower(rest[:end])
		add, ok := intervalUnits[unit]
		if !ok && stored {
			add, ok = subSecondUnits[unit]
		}
		if !ok {
			if unit == "" {
				return iv, fmt.Errorf("%d without a unit: want seconds, minutes, hours, days, weeks, fortnights, months or years", n)
			}
			return iv, fmt.Errorf("unit %q: want seconds, minutes, hours, days, weeks, fortnights, months or years", rest[:end])
		}
		add(n, &iv)
		items++
		rest = strings.TrimLeft(rest[end:], " \t,")
		for stored && agoWord(rest) {
			iv = iv.negated()
			rest = strings.TrimLeft(rest[3:], " \t,")
		}
	}
	ref := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !stored && !iv.after(ref).After(ref) {
		return iv, errors.New("does not move time forward")
	}
	return iv, nil
}

// after adds the interval as PHP's modify() does in UTC: years, months and
// days at once with day-of-month overflow carried (Jan 31 + 1 month is
// Mar 3, as in PHP), then the clock part; a weekday count or a day name
// instead moves by days and keeps the time of day.
func (iv interval) after(t time.Time) time.Time {
	switch {
	case iv.hasWeekdays:
		return addWeekdays(t, iv.weekdays)
	case iv.hasDayName:
		return nthDayName(t, iv.dayName, iv.dayCount)
	}
	return t.AddDate(iv.years, iv.months, iv.days).Add(iv.clock)
}

func (iv interval) negated() interval {
	iv.years, iv.months, iv.days, iv.clock, iv.weekdays = -iv.years, -iv.months, -iv.days, -iv.clock, -iv.weekdays
	return iv
}

// agoWord: the word "ago" starts s (and is not the start of a longer word).
func agoWord(s string) bool {
	return len(s) >= 3 && strings.EqualFold(s[:3], "ago") && (len(s) == 3 || !unicode.IsLetter(rune(s[3])))
}

// subSecondUnits move time by less than the second a DATETIME keeps; PHP
// takes them ("1500 msec" is 1.5 s, stored as the whole second).
var subSecondUnits = map[string]func(n int, iv *interval){
	"msec": addClock(time.Millisecond), "msecs": addClock(time.Millisecond),
	"millisecond": addClock(time.Millisecond), "milliseconds": addClock(time.Millisecond),
	"usec": addClock(time.Microsecond), "usecs": addClock(time.Microsecond),
	"microsecond": addClock(time.Microsecond), "microseconds": addClock(time.Microsecond),
}

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "sunday": time.Sunday, "mon": time.Monday, "monday": time.Monday,
	"tue": time.Tuesday, "tuesday": time.Tuesday, "wed": time.Wednesday, "wednesday": time.Wednesday,
	"thu": time.Thursday, "thursday": time.Thursday, "fri": time.Friday, "friday": time.Friday,
	"sat": time.Saturday, "saturday": time.Saturday,
}

// readStoredItem reads a stored interval that is one "N weekday(s)" item
// (optionally followed by "ago") or one "N <day name>" item.
func readStoredItem(s string) (interval, bool) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) < 2 || len(f) > 3 {
		return interval{}, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f[0], "+"))
	if err != nil || n > 1<<20 || n < -(1<<20) {
		return interval{}, false
	}
	ago := len(f) == 3
	if ago && f[2] != "ago" {
		return interval{}, false
	}
	if f[1] == "weekday" || f[1] == "weekdays" {
		if ago {
			n = -n
		}
		return interval{weekdays: n, hasWeekdays: true}, true
	}
	day, ok := dayNames[f[1]]
	if !ok {
		day, ok = dayNames[strings.TrimSuffix(f[1], "s")]
	}
	if !ok || ago { // PHP's "1 monday ago" is not "-1 monday"; left to PHP
		return interval{}, false
	}
	return interval{dayName: day, dayCount: n, hasDayName: true}, true
}

// addWeekdays is PHP's "+N weekdays": N working days on, Saturday and
// Sunday skipped. Counting forward starts from the Friday before a
// weekend day, backward from the Monday after it; 0 moves a weekend day
// to Monday.
func addWeekdays(t time.Time, n int) time.Time {
	day := func(k int) time.Time { return t.AddDate(0, 0, k) }
	wd := t.Weekday()
	switch {
	case n == 0 && wd == time.Saturday:
		return day(2)
	case n == 0 && wd == time.Sunday:
		return day(1)
	case n == 0:
		return t
	case n > 0 && wd == time.Saturday:
		t = day(-1)
	case n > 0 && wd == time.Sunday:
		t = day(-2)
	case n < 0 && wd == time.Saturday:
		t = day(2)
	case n < 0 && wd == time.Sunday:
		t = day(1)
	}
	step, count := 1, n
	if n < 0 {
		step, count = -1, -n
	}
	t = t.AddDate(0, 0, 7*step*(count/5))
	for i := 0; i < count%5; i++ {
		t = t.AddDate(0, 0, step)
		for t.Weekday() == time.Saturday || t.Weekday() == time.Sunday {
			t = t.AddDate(0, 0, step)
		}
	}
	return t
}

// nthDayName is PHP's "+N <day name>": for N of 0 or 1 the first such day
// from today on (today included), each further N a week later; for a
// negative N the last such day before today, each further one a week
// earlier. The time of day is kept.
func nthDayName(t time.Time, day time.Weekday, n int) time.Time {
	if n >= 0 {
		ahead := (int(day) - int(t.Weekday()) + 7) % 7
		return t.AddDate(0, 0, ahead+7*max(n-1, 0))
	}
	back := (int(t.Weekday()) - int(day) + 7) % 7
	if back == 0 {
		back = 7
	}
	return t.AddDate(0, 0, -back+7*(n+1))
}
