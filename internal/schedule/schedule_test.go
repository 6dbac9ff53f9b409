package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func at(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The expected times are what the plugin's CronExpression::next_run
// returns for the same input (PHP 8.2, UTC).
func TestCronNextMatchesThePlugin(t *testing.T) {
	for _, c := range []struct{ expr, from, want string }{
		// schedule_cron.json: created at 11:08:45, ticked at 11:08:47.
		{"*/15 * * * *", "2026-12-01 11:08:45", "2026-12-01 11:15:00"},
		{"0 3 * * 1-5", "2026-12-01 11:08:45", "2026-12-02 03:00:00"},
		{"0 9 1 * 1", "2026-12-01 11:08:45", "2027-02-01 09:00:00"}, // AND: robfig says 2026-12-07
		{"0 9 1 * 1", "2027-02-01 09:00:00", "2027-03-01 09:00:00"},
		{"*/15 * * * *", "2026-12-01 11:15:00", "2026-12-01 11:30:00"}, // strictly after the minute
		{"* * * * *", "2026-12-01 11:15:59", "2026-12-01 11:16:00"},
		{"0 0 * * 0", "2026-12-01 11:08:45", "2026-12-06 00:00:00"},
		{"0 0 * * 7", "2026-12-01 11:08:45", "2026-12-06 00:00:00"},     // 7 is Sunday
		{"0 12 * * 5-7", "2026-12-05 12:00:00", "2026-12-11 12:00:00"},  // 5-7 is Fri, Sat
		{"0 0 * * 1-7/2", "2026-12-01 11:08:45", "2026-12-02 00:00:00"}, // Mon, Wed, Fri
		{"0 0 31 * *", "2026-02-01 00:00:00", "2026-03-31 00:00:00"},
		{"5,35 */6 * * *", "2026-12-31 23:50:00", "2027-01-01 00:05:00"},
		{"0 0 1 1 *", "2026-12-31 23:59:59", "2027-01-01 00:00:00"},
		{"10-20/5 8-10 * * 1,3", "2026-12-01 10:20:00", "2026-12-02 08:10:00"},
		{"0 0 13 * 5", "2026-01-01 00:00:00", "2026-02-13 00:00:00"}, // Friday the 13th
		{"*/7 * * * *", "2026-12-01 11:57:00", "2026-12-01 12:00:00"},
		{"0 */2 */3 */4 *", "2026-05-02 00:00:00", "2026-05-04 00:00:00"},
		{"  0   3 * *  1-5 ", "2026-12-01 11:08:45", "2026-12-02 03:00:00"},
	} {
		e, err := Parse(Cron, c.expr)
		require.NoError(t, err, c.expr)
		got, err := e.Next(at(c.from))
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, got.Format(time.DateTime), "%s from %s", c.expr, c.from)
	}
}

func TestCronNoMatchWithinAYear(t *testing.T) {
	// The plugin throws "No matching time found within 1 year".
	e, err := Parse(Cron, "30 2 29 2 *")
	require.NoError(t, err)
	_, err = e.Next(at("2026-03-01 00:00:00"))
	require.ErrorContains(t, err, "no matching time within a year")
}

func TestCronRefusesWhatThePluginReadsDifferently(t *testing.T) {
	for expr, msg := range map[string]string{
		"* * * *":       "want 5 fields",
		"0 0 * * * *":   "want 5 fields",
		"@daily":        "want 5 fields",
		"0 9 * * MON":   "only numbers",
		"0 9 ? * 1":     "only numbers",
		"0 9 * JAN *":   "only numbers",
		"5/10 * * * *":  "a step needs * or a range",
		"60 * * * *":    "above maximum",
		"*/0 * * * *":   "step",
		"0 0 0 * *":     "below minimum",
		"0 0 * * 1-2-3": "too many hyphens",
	} {
		_, err := Parse(Cron, expr)
		require.Error(t, err, expr)
		require.Contains(t, err.Error(), msg, expr)
	}
}

// The expected times are PHP's DateTimeImmutable::modify('+'.$expression)
// from 2026-01-31 10:20:30 UTC.
func TestIntervalMatchesPHPModify(t *testing.T) {
	from := at("2026-01-31 10:20:30")
	for expr, want := range map[string]string{
		"10 minutes":           "2026-01-31 10:30:30",
		"1 hour":               "2026-01-31 11:20:30",
		"1hour":                "2026-01-31 11:20:30",
		"90 seconds":           "2026-01-31 10:22:00",
		"1 hour 30 minutes":    "2026-01-31 11:50:30",
		"1 hour -5 minutes":    "2026-01-31 11:15:30",
		"1 hour, 2 minutes":    "2026-01-31 11:22:30",
		"+1 hour":              "2026-01-31 11:20:30",
		"3 HOURS":              "2026-01-31 13:20:30",
		"1 Hour":               "2026-01-31 11:20:30",
		"  10 minutes  ":       "2026-01-31 10:30:30",
		"10minutes":            "2026-01-31 10:30:30",
		"1 month":              "2026-03-03 10:20:30", // Feb 31 carries over, as in PHP
		"1 month 1 day 1 hour": "2026-03-04 11:20:30",
		"1 day":                "2026-02-01 10:20:30",
		"1 days":               "2026-02-01 10:20:30",
		"2 weeks":              "2026-02-14 10:20:30",
		"1 weeks":              "2026-02-07 10:20:30",
		"1 fortnight":          "2026-02-14 10:20:30",
		"1 year":               "2027-01-31 10:20:30",
		"1 sec":                "2026-01-31 10:20:31",
		"30 secs":              "2026-01-31 10:21:00",
		"5 mins":               "2026-01-31 10:25:30",
		"1 min":                "2026-01-31 10:21:30",
		"3600 seconds":         "2026-01-31 11:20:30", // the WP-Cron bridge's form
	} {
		e, err := Parse(Interval, expr)
		require.NoError(t, err, expr)
		got, err := e.Next(from)
		require.NoError(t, err, expr)
		require.Equal(t, want, got.Format(time.DateTime), expr)
	}
}

func TestIntervalRefusesWhatIsNoInterval(t *testing.T) {
	for expr, msg := range map[string]string{
		"":                     "empty",
		"hour":                 "whole number",     // PHP: modify() returns false
		"every hour":           "whole number",     // PHP: false
		"next hour":            "whole number",     // PHP: false
		"1 hour and 2 minutes": "whole number",     // PHP: false
		"60":                   "without a unit",   // PHP: a time zone, no move
		"5 m":                  "unit \"m\"",       // PHP: a military zone, no move
		"1.5 hours":            "1 without a unit", // PHP: +5 hours
		"1 monday":             "unit \"monday\"",
		"1 weekday":            "unit \"weekday\"",
		"1 msec":               "unit \"msec\"",
		"1 years ago":          "\"ago\": want a whole number",
		"0 minutes":            "forward", // PHP: fires on every tick
		"-5 minutes":           "forward",
	} {
		_, err := Parse(Interval, expr)
		require.Error(t, err, expr)
		require.Contains(t, err.Error(), msg, expr)
	}
}

func TestNextTruncatesToSeconds(t *testing.T) {
	e, err := Parse(Interval, "10 minutes")
	require.NoError(t, err)
	got, err := e.Next(at("2026-12-01 11:08:39").Add(700 * time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, "2026-12-01 11:18:39", got.Format(time.DateTime), "schedule_interval.json snapshot 0")
}

func TestParsePolicyAndKind(t *testing.T) {
	for in, want := range map[string]Policy{"": Allow, "allow": Allow, "Skip": Skip, " buffer ": Buffer} {
		p, err := ParsePolicy(in)
		require.NoError(t, err)
		require.Equal(t, want, p)
	}
	_, err := ParsePolicy("queue")
	require.ErrorContains(t, err, "want allow, skip or buffer")
	_, err = Parse(Kind("daily"), "x")
	require.ErrorContains(t, err, "want interval or cron")
	e, err := Parse(Cron, "0 3 * * *")
	require.NoError(t, err)
	require.Equal(t, Cron, e.Kind())
	require.True(t, strings.HasPrefix(e.String(), "0 3"))
}

// A stored row is read as the plugin's tick reads it: the expected times
// (or failures) are what the plugin's CronExpression::next_run returns
// for the same input (PHP 8.2, UTC), names and "?" read as 0, "5/10"
// never matched, a step of 0 a DivisionByZeroError once it is reached.
func TestStoredCronMatchesThePluginsReading(t *testing.T) {
	for _, c := range []struct{ expr, from, want string }{
		{"0 9 * * MON", "2026-12-01 11:08:45", "2026-12-06 09:00:00"},
		{"0 9 ? * 1", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"0 9 * JAN *", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"5/10 * * * *", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"5/10,30 * * * *", "2026-12-01 11:08:45", "2026-12-01 11:30:00"},
		{"60 * * * *", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"0 0 0 * *", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"0 0 * * 1-2-3", "2026-12-01 11:08:45", "2026-12-07 00:00:00"},
		{"*/0 * * * *", "2026-12-01 11:08:45", "ERR Modulo by zero"},
		{"0 0 1 */0 *", "2026-12-01 11:08:45", "ERR Modulo by zero"},
		{"0 12 * * 5-2", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"1e1 * * * *", "2026-12-01 11:08:45", "2026-12-01 11:10:00"},
		{"15abc 3 * * *", "2026-12-01 11:08:45", "2026-12-02 03:15:00"},
		{"*/15,7 * * * SUN", "2026-12-01 11:08:45", "2026-12-06 00:00:00"},
		{"-5 * * * *", "2026-12-01 11:08:45", "2026-12-01 12:00:00"},
		{"0 0 * * 7/2", "2026-12-01 11:08:45", "ERR no matching time within a year"},
		{"0 0 1-31/0 1 *", "2026-12-01 11:08:45", "ERR Modulo by zero"},
		{"*/15 * * * *", "2026-12-01 11:08:45", "2026-12-01 11:15:00"},
		{"0 9 1 * 1", "2026-12-01 11:08:45", "2027-02-01 09:00:00"},
		{"0 0 * * 5-7", "2026-12-05 12:00:00", "2026-12-11 00:00:00"},
	} {
		e, err := ParseStored(Cron, c.expr)
		require.NoError(t, err, c.expr)
		got, err := e.Next(at(c.from))
		if msg, ok := strings.CutPrefix(c.want, "ERR "); ok {
			require.ErrorContains(t, err, msg, c.expr)
			continue
		}
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, got.Format(time.DateTime), "%s from %s", c.expr, c.from)
	}
	_, err := ParseStored(Cron, "@daily")
	require.ErrorContains(t, err, "want 5 fields", "the plugin throws on a field count other than 5")
}

// A stored interval is read as PHP's modify('+'.$expression) reads it,
// including what `schedule add` refuses: a sum that does not move time
// forward (the row then fires on every tick, as under the plugin),
// "ago", sub-second units, "N weekdays" and "N <day name>". The expected
// times are PHP 8.2's.
func TestStoredIntervalMatchesPHPModify(t *testing.T) {
	for _, c := range []struct{ expr, from, want string }{
		{"0 minutes", "2026-12-01 11:08:45", "2026-12-01 11:08:45"},
		{"-5 minutes", "2026-12-01 11:08:45", "2026-12-01 11:03:45"},
		{"2 hours ago", "2026-12-01 11:08:45", "2026-12-01 09:08:45"},
		{"1 hour 30 minutes ago", "2026-12-01 11:08:45", "2026-12-01 09:38:45"},
		{"1 day ago 1 hour", "2026-12-01 11:08:45", "2026-11-30 12:08:45"},
		{"5 minutes ago ago", "2026-12-01 11:08:45", "2026-12-01 11:13:45"},
		{"1500 msec", "2026-12-01 11:08:45", "2026-12-01 11:08:46"},
		{"2500000 usec", "2026-12-01 11:08:45", "2026-12-01 11:08:47"},
		{"1 weekday", "2026-12-01 11:08:45", "2026-12-02 11:08:45"},
		{"3 weekdays", "2026-12-01 11:08:45", "2026-12-04 11:08:45"},
		{"0 weekdays", "2026-12-01 11:08:45", "2026-12-01 11:08:45"},
		{"-1 weekday", "2026-12-01 11:08:45", "2026-11-30 11:08:45"},
		{"10 weekdays", "2026-12-01 11:08:45", "2026-12-15 11:08:45"},
		{"-6 weekdays", "2026-12-01 11:08:45", "2026-11-23 11:08:45"},
		{"1 weekday ago", "2026-12-01 11:08:45", "2026-11-30 11:08:45"},
		{"1 monday", "2026-12-01 11:08:45", "2026-12-07 11:08:45"},
		{"0 monday", "2026-12-01 11:08:45", "2026-12-07 11:08:45"},
		{"2 monday", "2026-12-01 11:08:45", "2026-12-14 11:08:45"},
		{"-1 tuesday", "2026-12-01 11:08:45", "2026-11-24 11:08:45"},
		{"-2 monday", "2026-12-01 11:08:45", "2026-11-23 11:08:45"},
		{"1 tue", "2026-12-01 11:08:45", "2026-12-01 11:08:45"},
		{"3 tue", "2026-12-01 11:08:45", "2026-12-15 11:08:45"},
		{"1 Mondays", "2026-12-01 11:08:45", "2026-12-07 11:08:45"},
		{"1 sun", "2026-12-01 11:08:45", "2026-12-06 11:08:45"},
		{"3600 seconds", "2026-12-01 11:08:45", "2026-12-01 12:08:45"},
		{"90 seconds", "2026-12-01 11:08:45", "2026-12-01 11:10:15"},
		{"0 minutes", "2026-12-04 23:30:00", "2026-12-04 23:30:00"},
		{"-5 minutes", "2026-12-04 23:30:00", "2026-12-04 23:25:00"},
		{"2 hours ago", "2026-12-04 23:30:00", "2026-12-04 21:30:00"},
		{"1 hour 30 minutes ago", "2026-12-04 23:30:00", "2026-12-04 22:00:00"},
		{"1 day ago 1 hour", "2026-12-04 23:30:00", "2026-12-04 00:30:00"},
		{"5 minutes ago ago", "2026-12-04 23:30:00", "2026-12-04 23:35:00"},
		{"1500 msec", "2026-12-04 23:30:00", "2026-12-04 23:30:01"},
		{"2500000 usec", "2026-12-04 23:30:00", "2026-12-04 23:30:02"},
		{"1 weekday", "2026-12-04 23:30:00", "2026-12-07 23:30:00"},
		{"3 weekdays", "2026-12-04 23:30:00", "2026-12-09 23:30:00"},
		{"0 weekdays", "2026-12-04 23:30:00", "2026-12-04 23:30:00"},
		{"-1 weekday", "2026-12-04 23:30:00", "2026-12-03 23:30:00"},
		{"10 weekdays", "2026-12-04 23:30:00", "2026-12-18 23:30:00"},
		{"-6 weekdays", "2026-12-04 23:30:00", "2026-11-26 23:30:00"},
		{"1 weekday ago", "2026-12-04 23:30:00", "2026-12-03 23:30:00"},
		{"1 monday", "2026-12-04 23:30:00", "2026-12-07 23:30:00"},
		{"0 monday", "2026-12-04 23:30:00", "2026-12-07 23:30:00"},
		{"2 monday", "2026-12-04 23:30:00", "2026-12-14 23:30:00"},
		{"-1 tuesday", "2026-12-04 23:30:00", "2026-12-01 23:30:00"},
		{"-2 monday", "2026-12-04 23:30:00", "2026-11-23 23:30:00"},
		{"1 tue", "2026-12-04 23:30:00", "2026-12-08 23:30:00"},
		{"3 tue", "2026-12-04 23:30:00", "2026-12-22 23:30:00"},
		{"1 Mondays", "2026-12-04 23:30:00", "2026-12-07 23:30:00"},
		{"1 sun", "2026-12-04 23:30:00", "2026-12-06 23:30:00"},
		{"3600 seconds", "2026-12-04 23:30:00", "2026-12-05 00:30:00"},
		{"90 seconds", "2026-12-04 23:30:00", "2026-12-04 23:31:30"},
		{"0 minutes", "2026-12-05 10:00:00", "2026-12-05 10:00:00"},
		{"-5 minutes", "2026-12-05 10:00:00", "2026-12-05 09:55:00"},
		{"2 hours ago", "2026-12-05 10:00:00", "2026-12-05 08:00:00"},
		{"1 hour 30 minutes ago", "2026-12-05 10:00:00", "2026-12-05 08:30:00"},
		{"1 day ago 1 hour", "2026-12-05 10:00:00", "2026-12-04 11:00:00"},
		{"5 minutes ago ago", "2026-12-05 10:00:00", "2026-12-05 10:05:00"},
		{"1500 msec", "2026-12-05 10:00:00", "2026-12-05 10:00:01"},
		{"2500000 usec", "2026-12-05 10:00:00", "2026-12-05 10:00:02"},
		{"1 weekday", "2026-12-05 10:00:00", "2026-12-07 10:00:00"},
		{"3 weekdays", "2026-12-05 10:00:00", "2026-12-09 10:00:00"},
		{"0 weekdays", "2026-12-05 10:00:00", "2026-12-07 10:00:00"},
		{"-1 weekday", "2026-12-05 10:00:00", "2026-12-04 10:00:00"},
		{"10 weekdays", "2026-12-05 10:00:00", "2026-12-18 10:00:00"},
		{"-6 weekdays", "2026-12-05 10:00:00", "2026-11-27 10:00:00"},
		{"1 weekday ago", "2026-12-05 10:00:00", "2026-12-04 10:00:00"},
		{"1 monday", "2026-12-05 10:00:00", "2026-12-07 10:00:00"},
		{"0 monday", "2026-12-05 10:00:00", "2026-12-07 10:00:00"},
		{"2 monday", "2026-12-05 10:00:00", "2026-12-14 10:00:00"},
		{"-1 tuesday", "2026-12-05 10:00:00", "2026-12-01 10:00:00"},
		{"-2 monday", "2026-12-05 10:00:00", "2026-11-23 10:00:00"},
		{"1 tue", "2026-12-05 10:00:00", "2026-12-08 10:00:00"},
		{"3 tue", "2026-12-05 10:00:00", "2026-12-22 10:00:00"},
		{"1 Mondays", "2026-12-05 10:00:00", "2026-12-07 10:00:00"},
		{"1 sun", "2026-12-05 10:00:00", "2026-12-06 10:00:00"},
		{"3600 seconds", "2026-12-05 10:00:00", "2026-12-05 11:00:00"},
		{"90 seconds", "2026-12-05 10:00:00", "2026-12-05 10:01:30"},
		{"0 minutes", "2026-12-06 10:00:00", "2026-12-06 10:00:00"},
		{"-5 minutes", "2026-12-06 10:00:00", "2026-12-06 09:55:00"},
		{"2 hours ago", "2026-12-06 10:00:00", "2026-12-06 08:00:00"},
		{"1 hour 30 minutes ago", "2026-12-06 10:00:00", "2026-12-06 08:30:00"},
		{"1 day ago 1 hour", "2026-12-06 10:00:00", "2026-12-05 11:00:00"},
		{"5 minutes ago ago", "2026-12-06 10:00:00", "2026-12-06 10:05:00"},
		{"1500 msec", "2026-12-06 10:00:00", "2026-12-06 10:00:01"},
		{"2500000 usec", "2026-12-06 10:00:00", "2026-12-06 10:00:02"},
		{"1 weekday", "2026-12-06 10:00:00", "2026-12-07 10:00:00"},
		{"3 weekdays", "2026-12-06 10:00:00", "2026-12-09 10:00:00"},
		{"0 weekdays", "2026-12-06 10:00:00", "2026-12-07 10:00:00"},
		{"-1 weekday", "2026-12-06 10:00:00", "2026-12-04 10:00:00"},
		{"10 weekdays", "2026-12-06 10:00:00", "2026-12-18 10:00:00"},
		{"-6 weekdays", "2026-12-06 10:00:00", "2026-11-27 10:00:00"},
		{"1 weekday ago", "2026-12-06 10:00:00", "2026-12-04 10:00:00"},
		{"1 monday", "2026-12-06 10:00:00", "2026-12-07 10:00:00"},
		{"0 monday", "2026-12-06 10:00:00", "2026-12-07 10:00:00"},
		{"2 monday", "2026-12-06 10:00:00", "2026-12-14 10:00:00"},
		{"-1 tuesday", "2026-12-06 10:00:00", "2026-12-01 10:00:00"},
		{"-2 monday", "2026-12-06 10:00:00", "2026-11-23 10:00:00"},
		{"1 tue", "2026-12-06 10:00:00", "2026-12-08 10:00:00"},
		{"3 tue", "2026-12-06 10:00:00", "2026-12-22 10:00:00"},
		{"1 Mondays", "2026-12-06 10:00:00", "2026-12-07 10:00:00"},
		{"1 sun", "2026-12-06 10:00:00", "2026-12-06 10:00:00"},
		{"3600 seconds", "2026-12-06 10:00:00", "2026-12-06 11:00:00"},
		{"90 seconds", "2026-12-06 10:00:00", "2026-12-06 10:01:30"},
	} {
		e, err := ParseStored(Interval, c.expr)
		require.NoError(t, err, c.expr)
		got, err := e.Next(at(c.from))
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, got.Format(time.DateTime), "%s from %s", c.expr, c.from)
	}
	// PHP reads these as a time zone or not at all: left to PHP's tick.
	for _, expr := range []string{"", "hour", "every 90 seconds", "60", "5 m", "1.5 hours", "12 hrs", "1 monday ago"} {
		_, err := ParseStored(Interval, expr)
		require.Error(t, err, expr)
	}
}
