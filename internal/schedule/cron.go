package schedule

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
)

// fiveFields reads exactly five fields, without descriptors (@daily) or
// seconds: the plugin splits on blanks and wants five.
var fiveFields = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// checkCron is what `schedule add` and the Go API take: a 5-field
// expression robfig/cron reads (so values stay in range and ranges run
// upwards), without the forms where the plugin's CronExpression reads it
// otherwise than a cron reader would:
//   - names (MON, JAN) and "?": PHP casts them to the integer 0, so "MON"
//     is Sunday there; refused.
//   - "N/step" without a range: robfig reads N-max/step, the plugin never
//     matches it; refused.
//   - day-of-week 7: the plugin takes a lone 7 as Sunday and ends a range
//     at 6 ("5-7" is Friday and Saturday); robfig refuses 7, so it is
//     rewritten to what the plugin means.
//
// A row the plugin wrote with one of those forms is still ticked: its
// next run comes from cronRule (cron_plugin.go), which reads every
// expression as the plugin does.
func checkCron(s string) error {
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		parts := strings.Split(f, ",")
		for j, p := range parts {
			if strings.Trim(p, "0123456789*-/") != "" {
				return fmt.Errorf("field %d %q: only numbers, *, ranges (1-5), steps (*/15) and lists (1,3,5)", i+1, f)
			}
			if rng, _, ok := strings.Cut(p, "/"); ok && rng != "*" && !strings.Contains(rng, "-") {
				return fmt.Errorf("field %d %q: a step needs * or a range before it (*/%s, 0-59/%s)", i+1, f, p[len(rng)+1:], p[len(rng)+1:])
			}
			if i == 4 {
				parts[j] = sundaySeven(p)
			}
		}
		fields[i] = strings.Join(parts, ",")
	}
	_, err := fiveFields.Parse(strings.Join(fields, " "))
	return err
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
