package store

import (
	"context"
	"fmt"
)

// ListArtifacts is ArtifactStore::list: a workflow's artifacts, by key.
func (s *Store) ListArtifacts(ctx context.Context, workflowID int64) ([]Artifact, error) {
	out := []Artifact{}
	if err := s.unsafe.SelectContext(ctx, &out, s.query(qArtifactsOf), workflowID); err != nil {
		return nil, fmt.Errorf("list artifacts: %w", err)
	}
	return out, nil
}
