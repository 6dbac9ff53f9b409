package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// ResourceProfile is what a handler's recent completions used
// (ResourceManager::handler_profile): 0 for an average or a peak no row
// recorded.
type ResourceProfile struct {
	Samples       int   `db:"sample_count"`
	AvgDurationMS int64 `db:"avg_duration_ms"`
	MaxMemoryKB   int64 `db:"max_memory_peak_kb"`
}

// HandlerResourceProfile reads handler's profile from its `completed` log
// rows written since since.
func (s *Store) HandlerResourceProfile(ctx context.Context, handler string, since time.Time) (ResourceProfile, error) {
	return s.resourceProfile(ctx, s.db, handler, since)
}

// HandlerResourceProfile is Store.HandlerResourceProfile read on the
// claim's own connection: a claim that waited for a second connection of
// its pool while holding one would wait forever once every connection is
// held by such a claim (sites sharing a small pool did, 30 s at a time).
func (c *ClaimTx) HandlerResourceProfile(ctx context.Context, handler string, since time.Time) (ResourceProfile, error) {
	return c.s.resourceProfile(ctx, c.tx, handler, since)
}

func (s *Store) resourceProfile(ctx context.Context, q sqlx.QueryerContext, handler string, since time.Time) (ResourceProfile, error) {
	var p ResourceProfile
	if err := sqlx.GetContext(ctx, q, &p, s.query(qHandlerResourceProfile), handler, DateTime(since)); err != nil {
		return p, fmt.Errorf("resource profile of %s: %w", handler, err)
	}
	return p, nil
}
