package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// The throughput chart has one bar per busy minute, scaled to the peak,
// and hour marks every three hours.
func TestThroughputChart(t *testing.T) {
	since := time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC)
	per := make([]int, 24*60)
	per[1], per[2], per[100] = 4, 8, 2
	svg := string(throughputChart(per, since))
	require.Equal(t, 3, strings.Count(svg, "h1V"), "a column per busy minute")
	require.Contains(t, svg, ">8/min<")
	require.Contains(t, svg, ">12:00<", "the 12:00 mark (minute 1)")
	require.Contains(t, svg, ">15:00<")
	require.NotContains(t, svg, ">13:00<", "marks every three hours")
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
