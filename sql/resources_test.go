package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHandlerResourceProfile reads ResourceManager::handler_profile: the
// handler's completed rows since the window's start, their rounded mean
// duration and largest memory peak; other events, handlers and older rows
// are out, and a handler without rows has no samples.
func TestHandlerResourceProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.s.Now()
	withMemory := func(at time.Time, handler, event string, ms, kb any) {
		e.exec("INSERT INTO {logs} (job_id, handler, queue, event, duration_ms, memory_peak_kb, created_at) VALUES (1, ?, 'default', ?, ?, ?, ?)",
			handler, event, ms, kb, DateTime(at))
	}
	withMemory(now, "a", "completed", 100, 2048)
	withMemory(now.Add(-10*time.Minute), "a", "completed", 201, 65536)
	withMemory(now, "a", "completed", nil, nil) // counted; no duration or memory
	withMemory(now, "a", "failed", 9000, 900000)
	withMemory(now.Add(-2*time.Hour), "a", "completed", 9000, 900000) // before the window
	withMemory(now, "b", "completed", 5, 10)

	p, err := e.s.HandlerResourceProfile(e.ctx, "a", now.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, ResourceProfile{Samples: 3, AvgDurationMS: 151, MaxMemoryKB: 65536}, p) // AVG(100, 201) = 150.5 → 151
	p, err = e.s.HandlerResourceProfile(e.ctx, "none", now.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, ResourceProfile{}, p)
}
