package store

import (
	"context"
	"fmt"
	"time"
)

// ReleaseJobLater gives an attempt back with nothing recorded, as if it
// had never been claimed, and makes the job available again at at; false
// when the attempt no longer holds the row. For a job this process must
// not run but another worker (PHP) can: they take it meanwhile.
func (s *Store) ReleaseJobLater(ctx context.Context, a Attempt, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.query(qReleaseJobLater), DateTime(at), a.ID, a.WorkerID, a.Attempt)
	if err != nil {
		return false, fmt.Errorf("release job %d: %w", a.ID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
