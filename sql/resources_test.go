package store

import (
	"context"
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

	// A claim reads it on its own connection: with the pool down to the
	// one the claim holds, the read still answers (on the pool it would
	// wait for the claim to end, which waits for the read).
	e.s.DB().SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	tx, err := e.s.BeginClaim(ctx)
	require.NoError(t, err)
	p, err = tx.HandlerResourceProfile(ctx, "a", now.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, ResourceProfile{Samples: 3, AvgDurationMS: 151, MaxMemoryKB: 65536}, p)
	require.NoError(t, tx.Rollback())
}
