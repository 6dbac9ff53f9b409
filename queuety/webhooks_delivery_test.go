package queuety

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety/internal/webhooks"
	store "github.com/queuety-go/queuety/sql"
)

// hookCounts is an Observer counting webhook results.
type hookCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hookCounts) ObserveClaim(time.Duration, int)                   {}
func (h *hookCounts) ObserveJob(string, string, Outcome, time.Duration) {}
func (h *hookCounts) ObserveWebhook(event, result string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[result]++
}

func (h *hookCounts) get(result string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[result]
}

// TestWebhooksDoNotHoldJobs: with the endpoint accepting requests but
// never answering, every job still completes; the requests that do not
// fit the queue are dropped and counted, none blocks a job.
func TestWebhooksDoNotHoldJobs(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	hl.hold = make(chan struct{})
	obs := &hookCounts{}
	const jobs = 200
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 8
		cfg.Observer = obs
		cfg.Webhooks = WebhookConfig{Timeout: time.Minute, Senders: 2, QueueSize: 5, Retries: -1}
	})
	ctx := context.Background()
	_, err := c.AddWebhook(ctx, WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/done")
	require.NoError(t, err)
	for i := 0; i < jobs; i++ {
		_, err := c.Dispatch(ctx, "noop", map[string]int{"i": i})
		require.NoError(t, err)
	}
	w, err := c.NewWorker(fixtureRegistry())
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	waitFor(t, 30*time.Second, "every job completed", func() bool { return countStatus(t, c, store.StatusCompleted) == jobs })
	// Still held: the senders each hold one request, the queue is full,
	// the rest were dropped.
	// (The last completions' events may be queued just after their
	// commit: wait for them.)
	waitFor(t, 10*time.Second, "the overflow dropped", func() bool { return obs.get("dropped") == jobs-2-5 })
	require.LessOrEqual(t, len(hl.requests()), 2)
	require.Equal(t, 0, obs.get("sent"))
	close(hl.hold)
	require.NoError(t, w.Stop(ctx))
	require.Equal(t, jobs, obs.get("sent")+obs.get("dropped")+obs.get("failed"))
	// The worker's delivery record, written by the senders and the
	// claim path at once, has every request too.
	got := w.WebhookDeliveries()
	require.Len(t, got, 1)
	require.Equal(t, obs.get("sent"), got[0].Sent)
	require.Equal(t, obs.get("dropped"), got[0].Dropped)
	require.Equal(t, obs.get("failed"), got[0].Failed)
}

// newTestNotifier is a started notifier over c's tables whose Stop drains
// all that is queued.
func newTestNotifier(t *testing.T, c *Client, cfg WebhookConfig, obs Observer) *webhooks.Notifier {
	t.Helper()
	return startTestNotifier(t, c, cfg, obs, time.Hour, clock.NewFake(time.Date(2026, 12, 1, 11, 10, 21, 0, time.UTC)))
}

// startTestNotifier is a started notifier over c's tables with Stop's
// grace and a clock.
func startTestNotifier(t *testing.T, c *Client, wc WebhookConfig, obs Observer, grace time.Duration, clk Clock) *webhooks.Notifier {
	t.Helper()
	require.NoError(t, wc.validate())
	p := webhookParams(c.store, Config{Webhooks: wc, Observer: obs, Clock: clk}, testLogger())
	p.Grace = grace
	n := webhooks.New(p)
	n.Stop() // a Stop before Start does nothing
	require.NoError(t, n.Start(context.Background()))
	return n
}

func hookData(id int64) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("job_id", phpjson.Int(id))
	return o
}

// TestWebhookRetries: a 5xx (or a 429) is tried again with backoff up to
// Retries times; a 4xx is final; with retries off one try is all.
func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		status, retries int
		tries           int
		result          string
	}{
		{"5xx retried", 503, 2, 3, "failed"},
		{"429 retried", 429, 1, 2, "failed"},
		{"4xx final", 404, 2, 1, "sent"},
		{"no retries", 500, -1, 1, "failed"},
		{"ok", 204, 2, 1, "sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hl := newHookListener(t)
			hl.status = tc.status
			obs := &hookCounts{}
			c := newTestClient(t, nil)
			_, err := c.AddWebhook(context.Background(), WebhookJobFailed, "http://127.0.0.1:"+hl.port()+"/f")
			require.NoError(t, err)
			n := newTestNotifier(t, c, WebhookConfig{Retries: tc.retries, RetryBackoff: time.Millisecond}, obs)
			n.Notify(WebhookJobFailed, hookData(7))
			n.Notify(WebhookJobBuried, hookData(8)) // no hook for it: nothing sent
			waitFor(t, 10*time.Second, "the delivery settled", func() bool { return obs.get(tc.result) == 1 })
			n.Stop()
			got := hl.requests()
			require.Len(t, got, tc.tries)
			for _, r := range got {
				require.Equal(t, string(got[0]), string(r), "every try sends the same bytes")
				require.Contains(t, string(r), `{"event":"job.failed","data":{"job_id":7},"timestamp":"2026-12-01T11:10:21Z"}`)
			}
		})
	}
}

// TestWebhookDeliveriesPerRegistration: each registration's results are
// kept for the dashboard: a 500 that is tried again counts as a retried
// try and leaves its error, its later success as sent; an endpoint that
// refuses every connection counts as failed with the dial error; the
// metric still sees sent and failed only.
func TestWebhookDeliveriesPerRegistration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hl := newHookListener(t)
	hl.failFirst = 1
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close())
	obs := &hookCounts{}
	c := newTestClient(t, nil)
	flaky, err := c.AddWebhook(ctx, WebhookJobFailed, "http://user:secret@127.0.0.1:"+hl.port()+"/f")
	require.NoError(t, err)
	dead, err := c.AddWebhook(ctx, WebhookJobBuried, fmt.Sprintf("http://127.0.0.1:%d/b", deadPort))
	require.NoError(t, err)
	n := newTestNotifier(t, c, WebhookConfig{Retries: 1, RetryBackoff: time.Millisecond}, obs)
	n.Notify(WebhookJobFailed, hookData(1))
	n.Notify(WebhookJobBuried, hookData(2))
	waitFor(t, 10*time.Second, "both settled", func() bool { return obs.get("sent") == 1 && obs.get("failed") == 1 })
	n.Notify(WebhookJobFailed, hookData(3))
	waitFor(t, 10*time.Second, "the second sent", func() bool { return obs.get("sent") == 2 })
	n.Stop()
	require.Zero(t, obs.get("retried"), "a retried try is not a metric result")

	got := n.Deliveries()
	require.Len(t, got, 2)
	f, b := got[0], got[1]
	require.Equal(t, flaky, f.WebhookID)
	require.Equal(t, WebhookJobFailed, f.Event)
	require.Equal(t, "http://user:xxxxx@127.0.0.1:"+hl.port()+"/f", f.URL, "credentials redacted")
	require.Equal(t, [4]int{2, 0, 0, 1}, [4]int{f.Sent, f.Failed, f.Dropped, f.Retried})
	require.Equal(t, "HTTP status 500", f.LastError)
	require.False(t, f.LastErrorAt.IsZero())
	require.False(t, f.LastAt.Before(f.LastErrorAt))
	require.Equal(t, dead, b.WebhookID)
	require.Equal(t, [4]int{0, 1, 0, 1}, [4]int{b.Sent, b.Failed, b.Dropped, b.Retried})
	require.Contains(t, b.LastError, "refused")
	require.Len(t, hl.requests(), 3, "the 500, its retry, the second event")
}

// TestWebhookDeadEndpointTimesOut: an endpoint that never answers costs
// one timeout per try, then the request is given up.
func TestWebhookDeadEndpointTimesOut(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	hl.hold = make(chan struct{})
	defer close(hl.hold)
	obs := &hookCounts{}
	c := newTestClient(t, nil)
	_, err := c.AddWebhook(context.Background(), WebhookJobBuried, "http://127.0.0.1:"+hl.port()+"/b")
	require.NoError(t, err)
	n := newTestNotifier(t, c, WebhookConfig{Timeout: 50 * time.Millisecond, Retries: 1, RetryBackoff: time.Millisecond}, obs)
	n.Notify(WebhookJobBuried, hookData(1))
	waitFor(t, 10*time.Second, "given up", func() bool { return obs.get("failed") == 1 })
	n.Stop()
	require.Len(t, hl.requests(), 2)
}

// TestWebhookStopDrains: Stop sends what is queued; with its grace over
// it drops the rest, counted, and returns.
func TestWebhookStopDrains(t *testing.T) {
	t.Parallel()
	t.Run("drained", func(t *testing.T) {
		t.Parallel()
		hl := newHookListener(t)
		obs := &hookCounts{}
		c := newTestClient(t, nil)
		_, err := c.AddWebhook(context.Background(), WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/c")
		require.NoError(t, err)
		n := newTestNotifier(t, c, WebhookConfig{Senders: 1}, obs)
		for i := int64(1); i <= 20; i++ {
			n.Notify(WebhookJobCompleted, hookData(i))
		}
		n.Stop()
		require.Len(t, hl.requests(), 20)
		require.Equal(t, 20, obs.get("sent"))
		n.Notify(WebhookJobCompleted, hookData(21)) // after Stop: dropped
		require.Equal(t, 1, obs.get("dropped"))
	})
	t.Run("grace over", func(t *testing.T) {
		t.Parallel()
		hl := newHookListener(t)
		hl.hold = make(chan struct{})
		defer close(hl.hold)
		obs := &hookCounts{}
		c := newTestClient(t, nil)
		_, err := c.AddWebhook(context.Background(), WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/c")
		require.NoError(t, err)
		n := startTestNotifier(t, c, WebhookConfig{Senders: 1, Timeout: time.Minute}, obs, 0, clock.Real{})
		for i := int64(1); i <= 5; i++ {
			n.Notify(WebhookJobCompleted, hookData(i))
		}
		waitFor(t, 10*time.Second, "the first request in flight", func() bool { return len(hl.requests()) == 1 })
		n.Stop() // no grace
		require.Equal(t, 4, obs.get("dropped"))
		require.Equal(t, 1, obs.get("failed"), "the request in flight is cut")
	})
}

// TestWebhookRefresh: a webhook added or removed after Start is seen at
// the next read of the table; a bad URL stored by hand is skipped.
func TestWebhookRefresh(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	obs := &hookCounts{}
	c := newTestClient(t, nil)
	ctx := context.Background()
	n := newTestNotifier(t, c, WebhookConfig{Senders: 1}, obs)
	n.Notify(WebhookJobCompleted, hookData(1)) // none registered yet
	id, err := c.AddWebhook(ctx, WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/c")
	require.NoError(t, err)
	_, err = c.store.AddWebhook(ctx, WebhookJobCompleted, "gopher://nowhere") // as PHP may store it
	require.NoError(t, err)
	n.RunOnce(ctx)
	n.Notify(WebhookJobCompleted, hookData(2))
	waitFor(t, 10*time.Second, "sent", func() bool { return obs.get("sent") == 1 })
	require.NoError(t, c.RemoveWebhook(ctx, id))
	n.RunOnce(ctx)
	n.Notify(WebhookJobCompleted, hookData(3))
	n.Stop()
	got := hl.requests()
	require.Len(t, got, 1)
	require.True(t, strings.Contains(string(got[0]), `"job_id":2`))
}

// TestWebhookRefreshTicksOnTheClock: the table is read again every
// Refresh of the notifier's clock, so a fake clock drives it.
func TestWebhookRefreshTicksOnTheClock(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 12, 1, 11, 10, 21, 0, time.UTC))
	cfg := WebhookConfig{Senders: 1}
	require.NoError(t, cfg.validate())
	n := webhooks.New(webhookParams(c.store, Config{Webhooks: cfg, Clock: clk}, testLogger()))
	n.TestSignals.Refreshed.Init()
	require.NoError(t, n.Start(ctx))
	defer n.Stop()
	refreshed := func() int {
		t.Helper()
		rows, ok := n.TestSignals.Refreshed.Wait(10 * time.Second)
		require.True(t, ok, "no read of the table")
		return rows
	}
	require.Zero(t, refreshed(), "the read at Start")
	_, err := c.AddWebhook(ctx, WebhookJobCompleted, "http://127.0.0.1:1/c")
	require.NoError(t, err)
	require.False(t, n.Wants(WebhookJobCompleted), "read at Start only")
	clk.Advance(cfg.Refresh)
	require.Equal(t, 1, refreshed(), "the refresh on the tick")
	require.True(t, n.Wants(WebhookJobCompleted))
}

// TestWebhookInvalidUTF8Message: an error message that is not UTF-8 is
// sent as the logs row stores it (U+FFFD), never dropped.
func TestWebhookInvalidUTF8Message(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	c := newTestClient(t, nil)
	_, err := c.AddWebhook(context.Background(), WebhookJobBuried, "http://127.0.0.1:"+hl.port()+"/b")
	require.NoError(t, err)
	n := newTestNotifier(t, c, WebhookConfig{}, nil)
	n.JobFailure(&store.JobRow{ID: 3, Handler: "h", Queue: "default"}, "bad \xff byte", true)
	n.Stop()
	got := hl.requests()
	require.Len(t, got, 1)
	require.Contains(t, string(got[0]), `{"event":"job.buried","data":{"job_id":3,"handler":"h","queue":"default","error_message":"bad \ufffd byte"},"timestamp":"2026-12-01T11:10:21Z"}`)
}

// TestWebhookConfigDefaults: zero values take the defaults, "no retries"
// survives a second validation, bad values are refused.
func TestWebhookConfigDefaults(t *testing.T) {
	t.Parallel()
	var c WebhookConfig
	require.NoError(t, c.validate())
	require.Equal(t, WebhookConfig{Timeout: DefaultWebhookTimeout, Retries: DefaultWebhookRetries, RetryBackoff: DefaultWebhookRetryBackoff,
		QueueSize: DefaultWebhookQueue, Senders: DefaultWebhookSenders, Refresh: DefaultWebhookRefresh}, c)
	none := WebhookConfig{Retries: -1}
	require.NoError(t, none.validate())
	require.NoError(t, none.validate())
	require.Equal(t, -1, none.Retries)
	for _, bad := range []WebhookConfig{{Timeout: -time.Second}, {Refresh: time.Millisecond}, {Senders: 300}, {QueueSize: -1}} {
		require.Error(t, bad.validate(), "%+v", bad)
	}
	cfg := Config{Webhooks: WebhookConfig{Senders: 999}}
	require.ErrorContains(t, cfg.Validate(), "senders")
}

// TestWebhookNotifyDuringStop: events from many goroutines while Stop
// runs are each sent or dropped, counted once, and none panics on the
// closed queue.
func TestWebhookNotifyDuringStop(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	obs := &hookCounts{}
	c := newTestClient(t, nil)
	_, err := c.AddWebhook(context.Background(), WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/c")
	require.NoError(t, err)
	n := newTestNotifier(t, c, WebhookConfig{QueueSize: 50}, obs)
	const goroutines, each = 10, 100
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				n.Notify(WebhookJobCompleted, hookData(int64(i)))
			}
		}()
	}
	close(start)
	n.Stop()
	wg.Wait()
	total := obs.get("sent") + obs.get("dropped") + obs.get("failed")
	require.Equal(t, goroutines*each, total)
	require.Equal(t, obs.get("sent"), len(hl.requests()))
}

// TestWebhookDrainGetsWhatIsLeftOfTheGrace: a worker's stop drains the
// notifier until its own grace ends, begun when Stop began, so jobs that
// used the grace do not buy the webhooks a second one; with less than one
// request timeout left (or none), the drain gets one timeout from now.
func TestWebhookDrainGetsWhatIsLeftOfTheGrace(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		left time.Duration // of the grace, at now
		want time.Duration // the drain's deadline, from now
	}{
		{"plenty left", 30 * time.Second, 30 * time.Second},
		{"one timeout left", time.Second, time.Second},
		{"less than a timeout", 200 * time.Millisecond, time.Second},
		{"grace over", -5 * time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grace, cancel := context.WithDeadline(context.Background(), now.Add(tc.left))
			defer cancel()
			ctx, cancel2 := webhookDrain(grace, time.Second, now)
			defer cancel2()
			dl, ok := ctx.Deadline()
			require.True(t, ok)
			require.Equal(t, now.Add(tc.want), dl)
		})
	}
	t.Run("no deadline", func(t *testing.T) {
		ctx, cancel := webhookDrain(context.Background(), time.Second, now)
		defer cancel()
		dl, _ := ctx.Deadline()
		require.Equal(t, now.Add(time.Second), dl)
	})
}

// TestWebhookStopWithin: a drain bounded by its caller's ctx drops what is
// queued once ctx ends, whatever the notifier's own grace.
func TestWebhookStopWithin(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	hl.hold = make(chan struct{})
	defer close(hl.hold)
	obs := &hookCounts{}
	c := newTestClient(t, nil)
	_, err := c.AddWebhook(context.Background(), WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/c")
	require.NoError(t, err)
	n := startTestNotifier(t, c, WebhookConfig{Senders: 1, Timeout: time.Minute}, obs, time.Hour, clock.Real{})
	for i := int64(1); i <= 3; i++ {
		n.Notify(WebhookJobCompleted, hookData(i))
	}
	waitFor(t, 10*time.Second, "the first request in flight", func() bool { return len(hl.requests()) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing left of the caller's bound
	n.StopWithin(ctx)
	require.Equal(t, 2, obs.get("dropped"))
	require.Equal(t, 1, obs.get("failed"), "the request in flight is cut")
	n.Stop() // a second stop does nothing
}
