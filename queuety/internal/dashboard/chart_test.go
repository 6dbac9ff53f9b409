package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// The throughput chart stacks failed on completed per column, scaled to
// the busiest column, with the numbers on hover; a day is bucketed into
// 15-minute columns with marks every three hours.
func TestThroughputChart(t *testing.T) {
	since := time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC)
	done, failed := make([]int, 60), make([]int, 60)
	done[1], done[2], failed[2], failed[40] = 4, 8, 2, 1
	svg := string(throughputChart(done, failed, since, 1, "last hour"))
	require.Equal(t, 2, strings.Count(svg, `<rect class="ok"`), "a green bar per minute with completions")
	require.Equal(t, 2, strings.Count(svg, `<rect class="bad"`))
	require.Contains(t, svg, "<title>12:01 UTC: 8 completed, 2 failed</title>")
	require.Contains(t, svg, `text-anchor="end">10</text>`, "the peak column (8+2) on the y axis")
	require.Contains(t, svg, ">12:00<", "a mark every 10 minutes")
	require.Contains(t, svg, ">12:10<")

	day, dayFailed := make([]int, 24*60), make([]int, 24*60)
	for i := range 30 {
		day[i] = 1 // 11:59 to 12:28: the 12:00 and 12:15 columns (11:59 is left out)
	}
	svg = string(throughputChart(day, dayFailed, since, 15, "last day"))
	require.Equal(t, 2, strings.Count(svg, `<rect class="ok"`))
	require.Contains(t, svg, "<title>12:00 UTC: 15 completed, 0 failed</title>")
	require.Contains(t, svg, ">15:00<", "marks every three hours")
	require.NotContains(t, svg, ">13:00<")
}

// Step and event names are escaped: the SVG is inserted as HTML.
func TestTimelineChartEscapesNames(t *testing.T) {
	name := `<script>alert(1)</script>`
	events := []workflow.TimelineEvent{
		{StepIndex: 0, StepName: &name, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:00"},
		{StepIndex: 0, StepName: &name, Event: workflow.EventStepFailed, CreatedAt: "2026-12-01 12:00:30"},
		{StepIndex: 1, Event: "signal_received<b>", CreatedAt: "2026-12-01 12:01:00"},
	}
	svg := string(timelineChart(events, []string{name}))
	require.NotContains(t, svg, "<script>")
	require.NotContains(t, svg, "<b>")
	require.Contains(t, svg, "&lt;script&gt;")
	require.Contains(t, svg, `<rect class="failed"`)
	require.Contains(t, svg, ">step 1<", "a lane past the definition is named by its index")
	require.Contains(t, svg, "+1m0s<", "spread over a minute: a time axis")
	require.Equal(t, "", string(timelineChart(nil, nil)))
}

// Events within fewer seconds than there are events are spaced in order.
func TestTimelineChartOrdinal(t *testing.T) {
	events := []workflow.TimelineEvent{
		{StepIndex: 0, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:00"},
		{StepIndex: 0, Event: workflow.EventStepCompleted, CreatedAt: "2026-12-01 12:00:00"},
		{StepIndex: 1, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:01"},
	}
	svg := string(timelineChart(events, []string{"a", "b"}))
	require.Contains(t, svg, "events in order")
	require.Contains(t, svg, `<rect class="done" x="150.0" y="4" width="365.0"`, "half the axis: one of two gaps")
	require.Contains(t, svg, `<rect class="current" x="880.0"`, "the running step from its start")
}

// A wait step writes no step_completed: its bar ends where the next step
// begins, not at the workflow's last event (it spanned the whole run).
func TestTimelineChartWaitStepEndsAtTheNextStep(t *testing.T) {
	events := []workflow.TimelineEvent{
		{StepIndex: 0, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:00"},
		{StepIndex: 0, Event: workflow.EventStepCompleted, CreatedAt: "2026-12-01 12:00:10"},
		{StepIndex: 1, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:10"},
		{StepIndex: 2, Event: workflow.EventStepStarted, CreatedAt: "2026-12-01 12:00:11"},
		{StepIndex: 2, Event: workflow.EventStepCompleted, CreatedAt: "2026-12-01 12:02:11"},
	}
	svg := string(timelineChart(events, []string{"draft", "wait_for_approval", "publish"}))
	require.NotContains(t, svg, `class="current"`, "nothing runs: the workflow is over")
	require.Contains(t, svg, "step 1 done when step 2 began, at 2026-12-01 12:00:11")
	// 131 s over 730 units: the wait is 1 s wide (5.6 units), not 121 s.
	require.Contains(t, svg, `<rect class="done" x="205.7" y="26" width="5.6"`)
}
