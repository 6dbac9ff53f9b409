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
