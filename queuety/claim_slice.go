package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// claimSlice is the slice of the backlog a worker on a cluster node claims
// first (store.ClaimParams.Slices): its node's index among the cluster's
// nodes. Daemons on one node share a slice, and their claims exclude each
// other with row locks as on one server; daemons on different nodes read
// different rows first, so their claims do not write the same rows and
// fail certification. The node's place changes when the cluster's
// membership does, so it is read again every sliceRefresh.
type claimSlice struct {
	store *store.Store
	on    bool
	log   *slog.Logger

	mu          sync.Mutex
	at          time.Time
	index, size int
}

const sliceRefresh = 5 * time.Second

// newClaimSlice slices claims when cfg asks for it ("on"; the server has
// to report a cluster). It is off by default: slicing orders a daemon's
// claims by slice before priority, which only pays where daemons write to
// different nodes; behind a proxy with one writer every daemon is on one
// node and row locks keep them apart.
func newClaimSlice(st *store.Store, cfg Config) *claimSlice {
	return &claimSlice{store: st, on: cfg.ClaimSlices == "on", log: cfg.Logger}
}

// apply sets p's slice; a failed read leaves the claim unsliced until the
// next refresh (it only costs conflicts, never correctness).
func (s *claimSlice) apply(ctx context.Context, now time.Time, p *store.ClaimParams) {
	if s == nil || !s.on {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.at) >= sliceRefresh {
		s.at = now
		index, size := 0, 0
		if i, n, ok, err := s.store.ClusterSlice(ctx); err == nil && ok {
			index, size = i, n
		}
		if (index != s.index || size != s.size) && s.log != nil {
			s.log.Info("claiming this node's slice of the backlog first", "slice", index, "of", size)
		}
		s.index, s.size = index, size
	}
	p.Slice, p.Slices = s.index, s.size
}
