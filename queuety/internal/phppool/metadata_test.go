package phppool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// A class's settings are read on a process of their own: with the one job
// process busy and more jobs queued for it, the read is answered before
// the backlog has run, where it used to wait behind every job queued
// before it (and, past metadataTimeout, a step job was written without
// them). Every job still runs once.
func TestClassMetadataDoesNotWaitBehindJobs(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	const backlog = 4
	var done atomic.Int32
	var wg sync.WaitGroup
	for i := range backlog {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, handle(t, p, int64(i+1), "sleeps", `{"ms":1500}`))
			done.Add(1)
		}()
	}
	require.Eventually(t, func() bool { return p.Stats().Busy == 1 }, 10*time.Second, 5*time.Millisecond, "the job process busy")
	got, err := p.ClassMetadata(context.Background(), "ConfiguredMetaStep")
	require.NoError(t, err)
	require.Equal(t, int64(4), got.MaxAttempts)
	// Behind the queue it came after three jobs; on its own process,
	// before the second has run.
	require.LessOrEqual(t, int(done.Load()), 1, "answered while the backlog still waits")
	wg.Wait()
	require.EqualValues(t, backlog, done.Load())
	require.Equal(t, 1, p.Stats().Spawns, "the metadata process is not a job process")
	require.Len(t, p.Stats().PIDs, 1)
}

// A class PHP cannot load (its autoloader throws) answers a read with
// PHP's exception, kept as the class's answer (reading again would only
// throw again); a peek knows it, with no settings, so its jobs are not
// deferred for ever.
func TestClassMetadataKeepsPHPsRefusal(t *testing.T) {
	t.Parallel()
	p := startPool(t, phppool.Config{Workers: 1}, nil)
	_, err := p.ClassMetadata(context.Background(), "BrokenAutoloadStep")
	var pe *phppool.Error
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Message, "the autoloader is broken")
	jobs := p.Stats().Jobs
	_, err = p.ClassMetadata(context.Background(), "BrokenAutoloadStep")
	require.ErrorAs(t, err, &pe)
	require.Equal(t, jobs, p.Stats().Jobs, "not asked again")
	m, known := p.PeekClassMetadata("BrokenAutoloadStep")
	require.True(t, known)
	require.Zero(t, m.MaxAttempts)
}
