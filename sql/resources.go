package store

import (
	"context"
	"fmt"
	"time"
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
	var p ResourceProfile
	if err := s.db.GetContext(ctx, &p, s.query(qHandlerResourceProfile), handler, DateTime(since)); err != nil {
		return p, fmt.Errorf("resource profile of %s: %w", handler, err)
	}
	return p, nil
}
