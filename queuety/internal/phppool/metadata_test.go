package phppool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/workflow"
)

// The pool reads a class's #[QueuetyStep] and config() in PHP once and
// keeps it; a registered name answers for its class, an unknown class has
// none.
func TestClassMetadataIsReadOnceThroughThePool(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	want := workflow.HandlerMetadata{Queue: "llm", MaxAttempts: 4, Backoff: phpjson.List(phpjson.Int(5), phpjson.Int(30)),
		RateLimit: &workflow.RateLimit{Max: 10, Window: 60}, ConcurrencyGroup: "provider", ConcurrencyLimit: 2, CostUnits: 3}

	_, known := p.PeekClassMetadata("ConfiguredMetaStep")
	require.False(t, known, "not read yet: the first peek starts the read")
	got, err := p.ClassMetadata(context.Background(), "ConfiguredMetaStep")
	require.NoError(t, err)
	requireMeta(t, want, got)
	jobs := p.Stats().Jobs

	peeked, known := p.PeekClassMetadata("ConfiguredMetaStep")
	require.True(t, known)
	requireMeta(t, want, peeked)
	requireMeta(t, want, p.HandlerMetadata("ConfiguredMetaStep"))
	require.Equal(t, jobs, p.Stats().Jobs, "cached: no second request")

	requireMeta(t, want, p.HandlerMetadata("configured_meta"))
	none := p.HandlerMetadata("NoSuchClass")
	require.Zero(t, none.MaxAttempts)
	require.Nil(t, none.RateLimit)
	require.True(t, none.Backoff.IsNull())
}

func requireMeta(t *testing.T, want, got workflow.HandlerMetadata) {
	t.Helper()
	wb, err := phpjson.Encode(want.Backoff)
	require.NoError(t, err)
	gb, err := phpjson.Encode(got.Backoff)
	require.NoError(t, err)
	require.Equal(t, string(wb), string(gb), "backoff")
	want.Backoff, got.Backoff = phpjson.Null(), phpjson.Null()
	require.Equal(t, want, got)
}
