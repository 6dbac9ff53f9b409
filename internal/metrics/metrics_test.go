package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countingTables struct{ reads atomic.Int32 }

func (c *countingTables) Snapshot(context.Context) (Snapshot, error) {
	c.reads.Add(1)
	return Snapshot{Jobs: []JobCount{{Queue: "default", Status: "pending", N: 7}}}, nil
}

func scrapeText(t *testing.T, m *Metrics) string {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(w.Body)
	require.NoError(t, err)
	return string(b)
}

// Handler label values are capped: past MaxHandlers distinct handlers,
// the rest count under "other".
func TestHandlerLabelsCapped(t *testing.T) {
	t.Parallel()
	m := New(Config{Tables: &countingTables{}, MaxHandlers: 3})
	for i := range 10 {
		m.ObserveJob("default", fmt.Sprint("h", i), "completed", time.Millisecond)
	}
	m.ObserveJob("default", "h0", "completed", time.Millisecond)
	text := scrapeText(t, m)
	require.Contains(t, text, `queuety_jobs_processed_total{handler="h0",outcome="completed",queue="default"} 2`)
	require.Contains(t, text, `queuety_jobs_processed_total{handler="other",outcome="completed",queue="default"} 7`)
	require.NotContains(t, text, `handler="h3"`)
}

// Scrapes within CacheFor share one read of the tables.
func TestSnapshotCached(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	tables := &countingTables{}
	m := New(Config{Tables: tables, Now: func() time.Time { return now }})
	for range 3 {
		require.True(t, strings.Contains(scrapeText(t, m), `queuety_jobs{queue="default",status="pending"} 7`))
	}
	require.EqualValues(t, 1, tables.reads.Load())
	now = now.Add(DefaultCacheFor)
	scrapeText(t, m)
	require.EqualValues(t, 2, tables.reads.Load())
}

type manyQueues struct{ snap Snapshot }

func (m manyQueues) Snapshot(context.Context) (Snapshot, error) { return m.snap, nil }

// N8: 10,000 queues with pending jobs make at most MaxQueues+1 label
// values per queue metric: the paused queue and the busiest keep their
// label, the rest (and a queue named "other") are summed under "other",
// so the totals are unchanged. The worker's counters are capped alike.
func TestQueueLabelsCapped(t *testing.T) {
	t.Parallel()
	snap := Snapshot{OldestPending: map[string]float64{}}
	var total float64
	for i := range 10000 {
		q := fmt.Sprintf("q%05d", i)
		n := float64(1 + i%7)
		snap.Jobs = append(snap.Jobs, JobCount{Queue: q, Status: "pending", N: n})
		snap.OldestPending[q] = float64(i)
		total += n
	}
	snap.Jobs = append(snap.Jobs, JobCount{Queue: "busy", Status: "pending", N: 1000}, JobCount{Queue: "other", Status: "buried", N: 3})
	snap.Paused = []string{"q09999"}
	total += 1000
	m := New(Config{Tables: manyQueues{snap}})
	text := scrapeText(t, m)

	series := map[string]int{}
	var pending, buried float64
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.HasPrefix(name, "queuety_") {
			continue
		}
		series[name]++
		var v float64
		_, err := fmt.Sscan(rest[strings.LastIndex(rest, " ")+1:], &v)
		require.NoError(t, err, line)
		switch {
		case name == "queuety_jobs" && strings.Contains(rest, `status="pending"`):
			pending += v
		case name == "queuety_jobs" && strings.Contains(rest, `status="buried"`):
			buried += v
		}
	}
	require.Equal(t, len(JobStatuses)*(DefaultMaxQueues+1), series["queuety_jobs"], "every status × (cap + other)")
	require.Equal(t, DefaultMaxQueues+1, series["queuety_queue_oldest_pending_age_seconds"])
	require.Equal(t, DefaultMaxQueues+1, series["queuety_queue_paused"])
	require.Equal(t, total, pending, "no job lost in the folding")
	require.Equal(t, 3.0, buried)
	require.Contains(t, text, `queuety_queue_paused{queue="q09999"} 1`, "a paused queue keeps its label")
	require.Contains(t, text, `queuety_jobs{queue="busy",status="pending"} 1000`, "the busiest queue keeps its label")
	require.Contains(t, text, `queuety_jobs{queue="other",status="buried"} 3`)
	require.Contains(t, text, `queuety_queue_oldest_pending_age_seconds{queue="other"} 9998`, "other's age is the oldest folded")
	require.Less(t, len(text), 200_000, "a scrape stays small")
	t.Logf("10,002 queues: %d queuety_jobs, %d oldest-age, %d paused series; %d bytes a scrape",
		series["queuety_jobs"], series["queuety_queue_oldest_pending_age_seconds"], series["queuety_queue_paused"], len(text))

	for i := range 300 {
		m.ObserveJob(fmt.Sprintf("w%03d", i), "h", "completed", time.Millisecond)
	}
	text = scrapeText(t, m)
	require.Contains(t, text, fmt.Sprintf(`queuety_jobs_processed_total{handler="h",outcome="completed",queue="other"} %d`, 300-DefaultMaxQueues))
	require.NotContains(t, text, `queue="w100"`)
}
