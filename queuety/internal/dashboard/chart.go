package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/queuety-go/queuety/workflow"
)

// throughputChart draws attempts completed and failed as an inline SVG
// bar chart: one column per bucket minutes from since, completed (green)
// under failed (red), scaled to the busiest column, with the peak on the
// y axis, time marks along x (UTC) and each column's numbers on hover
// (its <title>). A column is at least 6 units wide, so a day of 15-minute
// buckets is 96 readable bars, not a hairline per minute. Only numbers
// and formatted times go into the markup.
func throughputChart(completed, failed []int, since time.Time, bucket int, label string) template.HTML {
	bucket = max(bucket, 1)
	// Columns start on the clock (12:00, 12:15): the minutes before the
	// first such start are left out.
	since = since.UTC()
	if skip := (bucket - (since.Hour()*60+since.Minute())%bucket) % bucket; skip > 0 && skip < len(completed) {
		completed, failed, since = completed[skip:], failed[skip:], since.Add(time.Duration(skip)*time.Minute)
	}
	n := (len(completed) + bucket - 1) / bucket
	done, bad := make([]int, n), make([]int, n)
	for i := range completed {
		done[i/bucket] += completed[i]
		bad[i/bucket] += failed[i]
	}
	const h, top, bottom, left = 160, 10, 22, 44
	col := max(6, 960/max(n, 1))
	w := left + n*col
	peak := 1
	for i := range done {
		peak = max(peak, done[i]+bad[i])
	}
	plot := float64(h - top - bottom)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="attempts completed and failed, %s">`, w, h, html.EscapeString(label))
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<line class="tick" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, top, w, top)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%d</text><text x="%d" y="%d" text-anchor="end">0</text>`, left-4, top+4, peak, left-4, h-bottom)
	// Marks: every 10 minutes on a per-minute chart, every 3 hours on a
	// coarser one.
	markEvery := 10
	if bucket > 1 {
		markEvery = 180
	}
	for i := 0; i < n; i++ {
		t := since.Add(time.Duration(i*bucket) * time.Minute).UTC()
		x := left + i*col
		if (t.Hour()*60+t.Minute())%markEvery == 0 {
			fmt.Fprintf(&b, `<line class="tick" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="%d" y="%d">%s</text>`,
				x, top, x, h-bottom, x+2, h-6, t.Format("15:04"))
		}
		if done[i]+bad[i] == 0 {
			continue
		}
		gh := plot * float64(done[i]) / float64(peak)
		rh := plot * float64(bad[i]) / float64(peak)
		base := float64(h - bottom)
		fmt.Fprintf(&b, `<g><title>%s UTC: %d completed, %d failed</title>`, t.Format("15:04"), done[i], bad[i])
		if done[i] > 0 {
			fmt.Fprintf(&b, `<rect class="ok" x="%d" y="%.1f" width="%d" height="%.1f"/>`, x+1, base-gh, col-2, gh)
		}
		if bad[i] > 0 {
			fmt.Fprintf(&b, `<rect class="bad" x="%d" y="%.1f" width="%d" height="%.1f"/>`, x+1, base-gh-rh, col-2, rh)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// timelineChart draws a workflow's events as an inline SVG: one lane per
// step (named by steps), a bar from a step's start to its completion or
// failure, a dot for every other event, and the time since the first
// event on the x axis. Event times have whole seconds, so when the events
// are packed into fewer seconds than there are events they are spaced in
// their order instead.
func timelineChart(events []workflow.TimelineEvent, steps []string) template.HTML {
	if len(events) == 0 {
		return ""
	}
	times := make([]time.Time, len(events))
	lanes := len(steps)
	for i, e := range events {
		times[i], _ = time.Parse(time.DateTime, e.CreatedAt)
		lanes = max(lanes, e.StepIndex+1)
	}
	t0, t1 := times[0], times[0]
	for _, t := range times {
		if t.Before(t0) {
			t0 = t
		}
		if t.After(t1) {
			t1 = t
		}
	}
	const w, lane, left, right = 900, 22, 150, 20
	h := lane*lanes + 30
	ordinal := t1.Sub(t0) < time.Duration(len(events))*time.Second
	span := max(t1.Sub(t0).Seconds(), 1)
	if ordinal {
		span = float64(max(len(events)-1, 1))
	}
	// x places event i (at time t) on the axis.
	x := func(i int, t time.Time) float64 {
		if ordinal {
			return left + (w-left-right)*float64(i)/span
		}
		return left + (w-left-right)*t.Sub(t0).Seconds()/span
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %d %d" role="img" aria-label="workflow timeline">`, w, h)
	started := map[int]float64{} // step → x of its first start
	startedAt := map[int]int{}   // step → index of that event
	for i, e := range events {
		y := lane*e.StepIndex + 4
		at := x(i, times[i])
		switch e.Event {
		case workflow.EventStepStarted:
			if _, ok := started[e.StepIndex]; !ok {
				started[e.StepIndex] = at
				startedAt[e.StepIndex] = i
			}
		case workflow.EventStepCompleted, workflow.EventStepFailed:
			from, ok := started[e.StepIndex]
			if !ok {
				from = at
			}
			cls := "done"
			if e.Event == workflow.EventStepFailed {
				cls = "failed"
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
				cls, from, y, max(at-from, 3), lane-8, html.EscapeString(fmt.Sprintf("step %d %s at %s", e.StepIndex, e.Event, e.CreatedAt)))
			delete(started, e.StepIndex)
		default:
			fmt.Fprintf(&b, `<circle class="event" cx="%.1f" cy="%d" r="4"><title>%s</title></circle>`,
				at, y+(lane-8)/2, html.EscapeString(e.Event+" at "+e.CreatedAt))
		}
	}
	// A step with no completion event either ended when a later step
	// began (a wait step writes no step_completed: its wait is over when
	// the next step starts) or is still running, to the last event.
	end := x(len(events)-1, t1)
	for step, from := range started {
		cls, to, title := "current", end, fmt.Sprintf("step %d running", step)
		for j := startedAt[step] + 1; j < len(events); j++ {
			if events[j].StepIndex > step {
				cls, to, title = "done", x(j, times[j]), fmt.Sprintf("step %d done when step %d began, at %s", step, events[j].StepIndex, events[j].CreatedAt)
				break
			}
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
			cls, from, lane*step+4, max(to-from, 3), lane-8, html.EscapeString(title))
	}
	for i := 0; i < lanes; i++ {
		label := fmt.Sprintf("step %d", i)
		if i < len(steps) {
			label = steps[i]
		}
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`, lane*i+lane/2+4, html.EscapeString(truncate(label, 22)))
	}
	axis := "+" + t1.Sub(t0).String()
	if ordinal {
		axis += ", events in order"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
		left, h-6, html.EscapeString(t0.Format(time.DateTime)), w-right, h-6, html.EscapeString(axis))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
