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
func parseInterval(s string) (interval, error) {
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
		if !ok {
			if unit == "" {
				return iv, fmt.Errorf("%d without a unit: want seconds, minutes, hours, days, weeks, fortnights, months or years", n)
			}
			return iv, fmt.Errorf("unit %q: want seconds, minutes, hours, days, weeks, fortnights, months or years", rest[:end])
		}
		add(n, &iv)
		items++
		rest = strings.TrimLeft(rest[end:], " \t,")
	}
	ref := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !iv.after(ref).After(ref) {
		return iv, errors.New("does not move time forward")
	}
	return iv, nil
}

// after adds the interval as PHP's modify() does in UTC: years, months and
// days at once with day-of-month overflow carried (Jan 31 + 1 month is
// Mar 3, as in PHP), then the clock part.
func (iv interval) after(t time.Time) time.Time {
	return t.AddDate(iv.years, iv.months, iv.days).Add(iv.clock)
}
