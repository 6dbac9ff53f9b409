package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/queuety-go/queuety/workflow"
)

// throughputChart draws jobs completed per minute as an inline SVG: one
// column per minute from since, the tallest at the top, hour marks every
// three hours (UTC). Only numbers and formatted times go into the markup.
func throughputChart(perMin []int, since time.Time) template.HTML {
	const w, h, top, bottom = 1440, 150, 8, 20
	peak := 1
	for _, n := range perMin {
		peak = max(peak, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" preserveAspectRatio="none" role="img" aria-label="jobs completed per minute, last 24 hours">`, w, h)
	plot := float64(h - top - bottom)
	fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%d" x2="%d" y2="%d"/>`, h-bottom, w, h-bottom)
	b.WriteString(`<path class="bars" d="`)
	for i, n := range perMin {
		if n == 0 {
			continue
		}
		bh := plot * float64(n) / float64(peak)
		fmt.Fprintf(&b, "M%d %.1fV%dh1V%.1fz", i, float64(h-bottom)-bh, h-bottom, float64(h-bottom)-bh)
	}
	b.WriteString(`"/>`)
	for i := range perMin {
		t := since.Add(time.Duration(i) * time.Minute)
		if t.UTC().Minute() == 0 && t.UTC().Hour()%3 == 0 {
			fmt.Fprintf(&b, `<line class="tick" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="%d" y="%d">%s</text>`,
				i, top, i, h-bottom, i+3, h-6, t.UTC().Format("15:04"))
		}
	}
	fmt.Fprintf(&b, `<text x="4" y="%d">%d/min</text>`, top+10, peak)
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
	for i, e := range events {
		y := lane*e.StepIndex + 4
		at := x(i, times[i])
		switch e.Event {
		case workflow.EventStepStarted:
			if _, ok := started[e.StepIndex]; !ok {
				started[e.StepIndex] = at
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
	// A step started and not finished yet runs to the last event.
	end := x(len(events)-1, t1)
	for i, from := range started {
		fmt.Fprintf(&b, `<rect class="current" x="%.1f" y="%d" width="%.1f" height="%d"><title>step %d running</title></rect>`,
			from, lane*i+4, max(end-from, 3), lane-8, i)
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
