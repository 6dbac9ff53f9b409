package schedule

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// errModuloByZero is what PHP throws for a step of 0 (`*/0`, `1-5/x`)
// when the plugin's matcher reaches it: the tick fails for that row.
var errModuloByZero = errors.New("a step of 0 (PHP: Modulo by zero)")

// cronRule is a cron expression as the plugin's CronExpression reads it
// at every tick: five blank-separated fields, each a comma list of items,
// every number read with PHP's (int) cast. That reading is kept as it is,
// names and all ("MON" and "?" are 0, so "MON" is Sunday; "5/10" never
// matches), so a row the plugin accepts gets the next run the plugin
// would write, whoever ticks it.
type cronRule [5]cronField

// cronField is one field's items; a value matches when any item does.
type cronField []cronItem

type cronItemKind uint8

const (
	cronAny       cronItemKind = iota // *
	cronEvery                         // */step
	cronRangeStep                     // lo-hi/step
	cronNever                         // n/step: the plugin's matcher has no case for it
	cronRange                         // lo-hi
	cronExact                         // n (a lone 7 in day-of-week is 0)
)

type cronItem struct {
	kind         cronItemKind
	lo, hi, step int64
}

// The fields' order and the lowest value each starts its */step count at.
var cronMins = [5]int64{0, 0, 1, 1, 0}

// parseCronRule splits expression as the plugin does (blanks, exactly five
// fields) and reads every item; nothing else is refused here, as the
// plugin refuses nothing else.
func parseCronRule(expression string) (cronRule, error) {
	var r cronRule
	fields := strings.Fields(expression)
	if len(fields) != 5 {
		return r, errors.New("want 5 fields (minute hour day-of-month month day-of-week), got " + strconv.Itoa(len(fields)))
	}
	for i, f := range fields {
		for _, part := range strings.Split(f, ",") {
			r[i] = append(r[i], readCronItem(strings.TrimSpace(part), i == 4))
		}
	}
	return r, nil
}

// readCronItem reads one item by the first of "/", "-", "*" it holds, as
// the plugin's matcher tests them.
func readCronItem(p string, dow bool) cronItem {
	if rng, step, ok := strings.Cut(p, "/"); ok {
		switch lo, hi, isRange := strings.Cut(rng, "-"); {
		case rng == "*":
			return cronItem{kind: cronEvery, step: phpInt(step)}
		case isRange:
			return cronItem{kind: cronRangeStep, lo: phpInt(lo), hi: phpInt(hi), step: phpInt(step)}
		}
		return cronItem{kind: cronNever}
	}
	if lo, hi, ok := strings.Cut(p, "-"); ok {
		return cronItem{kind: cronRange, lo: phpInt(lo), hi: phpInt(hi)}
	}
	if p == "*" {
		return cronItem{kind: cronAny}
	}
	n := phpInt(p)
	if dow && n == 7 {
		n = 0
	}
	return cronItem{kind: cronExact, lo: n}
}

func (it cronItem) matches(v, min int64) (bool, error) {
	switch it.kind {
	case cronAny:
		return true, nil
	case cronEvery:
		if it.step == 0 {
			return false, errModuloByZero
		}
		return (v-min)%it.step == 0, nil
	case cronRangeStep:
		if v < it.lo || v > it.hi {
			return false, nil
		}
		if it.step == 0 {
			return false, errModuloByZero
		}
		return (v-it.lo)%it.step == 0, nil
	case cronRange:
		return v >= it.lo && v <= it.hi, nil
	case cronExact:
		return v == it.lo, nil
	}
	return false, nil
}

func (f cronField) matches(v, min int64) (bool, error) {
	for _, it := range f {
		ok, err := it.matches(v, min)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// next walks forward from the minute after from as the plugin does: a
// month that does not match skips to the next month, a day (day-of-month
// and day-of-week both required) to the next day, an hour to the next
// hour, a minute to the next minute; after a year it gives up. Fields are
// tested in that order, so a step of 0 fails only once it is reached.
func (r cronRule) next(from time.Time) (time.Time, error) {
	t := from.UTC().Truncate(time.Minute).Add(time.Minute)
	limit := from.UTC().AddDate(1, 0, 0)
	for !t.After(limit) {
		ok, err := r[3].matches(int64(t.Month()), cronMins[3])
		if err != nil {
			return time.Time{}, err
		}
		if !ok {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		ok, err = r[2].matches(int64(t.Day()), cronMins[2])
		if err == nil && ok {
			ok, err = r[4].matches(int64(t.Weekday()), cronMins[4])
		}
		if err != nil {
			return time.Time{}, err
		}
		if !ok {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if ok, err = r[1].matches(int64(t.Hour()), cronMins[1]); err != nil {
			return time.Time{}, err
		} else if !ok {
			t = t.Truncate(time.Hour).Add(time.Hour)
			continue
		}
		if ok, err = r[0].matches(int64(t.Minute()), cronMins[0]); err != nil {
			return time.Time{}, err
		} else if !ok {
			t = t.Add(time.Minute)
			continue
		}
		return t, nil
	}
	return time.Time{}, errNoMatchWithinAYear
}

var errNoMatchWithinAYear = errors.New("no matching time within a year")

// phpInt is PHP's (int) cast of a string: leading blanks, then the
// longest numeric prefix (sign, digits, a fraction, an exponent), its
// integer part, saturated at the int range; 0 when there is none
// ("MON", "?", "0x1A").
func phpInt(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := func() int {
		n := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
			n++
		}
		return n
	}
	intDigits := digits()
	isFloat := false
	if end < len(s) && s[end] == '.' {
		save := end
		end++
		if digits() == 0 && intDigits == 0 {
			end = save
		} else {
			isFloat = true
		}
	}
	if intDigits == 0 && !isFloat {
		return 0
	}
	if end < len(s) && (s[end] == 'e' || s[end] == 'E') {
		save := end
		end++
		if end < len(s) && (s[end] == '+' || s[end] == '-') {
			end++
		}
		if digits() == 0 {
			end = save
		} else {
			isFloat = true
		}
	}
	num := s[:end]
	if !isFloat {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil { // out of range: PHP saturates
			if strings.HasPrefix(num, "-") {
				return math.MinInt64
			}
			return math.MaxInt64
		}
		return n
	}
	f, err := strconv.ParseFloat(num, 64)
	switch {
	case err != nil && !math.IsInf(f, 0):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
