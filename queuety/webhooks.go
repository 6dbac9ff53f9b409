package queuety

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// The webhook events the plugin's worker sends (WebhookNotifier::notify).
const (
	WebhookJobCompleted   = "job.completed"
	WebhookJobFailed      = "job.failed"
	WebhookJobBuried      = "job.buried"
	WebhookWorkflowFailed = "workflow.failed"
)

// WebhookEvents lists them.
var WebhookEvents = []string{WebhookJobCompleted, WebhookJobFailed, WebhookJobBuried, WebhookWorkflowFailed}

// Webhook delivery defaults (Config.Webhooks).
const (
	DefaultWebhookTimeout      = time.Second // the plugin's stream timeout
	DefaultWebhookRetries      = 2
	DefaultWebhookRetryBackoff = 500 * time.Millisecond
	DefaultWebhookQueue        = 1000
	DefaultWebhookSenders      = 4
	DefaultWebhookRefresh      = 10 * time.Second
)

// WebhookConfig tunes how `work` sends the plugin's webhooks. The plugin
// posts them synchronously from the worker, after each outcome is written;
// the daemon sends the same requests from a queue and a few senders, so a
// slow or dead endpoint never holds up a job.
type WebhookConfig struct {
	// Disabled sends none (the webhooks table is not read).
	Disabled bool
	// Timeout bounds one request, connection included (default 1 s).
	Timeout time.Duration
	// Retries is how many more tries a request gets after a network error,
	// a timeout, a 5xx or a 429 (default 2; negative: none). The plugin
	// tries once.
	Retries int
	// RetryBackoff is the pause before the first retry, doubled after each
	// (default 500 ms).
	RetryBackoff time.Duration
	// QueueSize is how many requests may wait; past it new ones are dropped
	// with a warning and counted (default 1000).
	QueueSize int
	// Senders is how many requests are in flight at most (default 4).
	Senders int
	// Refresh is how often the webhooks table is read again, so a webhook
	// added or removed from PHP or the CLI is seen without a restart
	// (default 10 s).
	Refresh time.Duration
}

func (c *WebhookConfig) validate() error {
	defDur(&c.Timeout, DefaultWebhookTimeout)
	defDur(&c.RetryBackoff, DefaultWebhookRetryBackoff)
	defDur(&c.Refresh, DefaultWebhookRefresh)
	// A negative Retries stays negative, so validating twice keeps "none".
	if c.Retries == 0 {
		c.Retries = DefaultWebhookRetries
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultWebhookQueue
	}
	if c.Senders == 0 {
		c.Senders = DefaultWebhookSenders
	}
	switch {
	case c.Timeout < 0 || c.RetryBackoff < 0 || c.Refresh < 0:
		return errors.New("webhook timeout, retry backoff and refresh must not be negative")
	case c.Refresh < time.Second:
		return errors.New("webhook refresh: at least 1s, or the webhooks table is read in a busy loop")
	case c.QueueSize < 1 || c.Senders < 1 || c.Senders > 256:
		return errors.New("webhook queue size must be positive and senders between 1 and 256")
	}
	return nil
}

// WebhookObserver is an Observer that also counts webhook requests: result
// is "sent" (an answer came), "failed" (given up after the retries) or
// "dropped" (the queue was full, or Stop's grace ran out first).
type WebhookObserver interface {
	ObserveWebhook(event, result string)
}

// webhookDelivery is one request to send.
type webhookDelivery struct {
	event  string
	target webhookTarget
	body   []byte
}

// webhookNotifier sends the plugin's webhook requests off the claim path:
// notify encodes the body at once (its timestamp is the event's) and
// queues one delivery per URL registered for the event; senders post them.
type webhookNotifier struct {
	store *store.Store
	cfg   WebhookConfig
	log   *slog.Logger
	clock clock.Clock
	obs   WebhookObserver
	// dial opens connections (net.Dialer's; tests may replace it).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	hooks atomic.Pointer[map[string][]webhookTarget] // event → registrations, the last read
	// deliveries counts each registration's results for the dashboard.
	deliveries webhookDeliveries

	mu     sync.RWMutex // closed and the send on queue
	closed bool
	queue  chan webhookDelivery

	ctx     context.Context // cancelled when Stop's grace is over
	cancel  context.CancelFunc
	senders sync.WaitGroup
	// refresher rereads the webhooks table every cfg.Refresh of the
	// clock, in the worker's one loop shape (service.go).
	refresher *tickerService

	stopOnce sync.Once
	dropped  atomic.Int64
	warnedAt atomic.Int64 // unix nanos of the last drop warning
}

func newWebhookNotifier(s *store.Store, cfg WebhookConfig, log *slog.Logger, clk clock.Clock, obs Observer) *webhookNotifier {
	n := &webhookNotifier{store: s, cfg: cfg, log: log.With("service", "webhooks"), clock: clk,
		dial: (&net.Dialer{}).DialContext}
	n.obs, _ = obs.(WebhookObserver)
	return n
}

// Start reads the webhooks table, then starts the senders and the refresh.
// The notifier is not a service of its own: its Stop takes the worker's
// shutdown grace for the queued requests; its refresh loop is one.
// A failed read is logged and retried at the next refresh: webhooks are
// best effort, as in the plugin, and never keep the worker from starting.
func (n *webhookNotifier) Start(ctx context.Context) {
	n.queue = make(chan webhookDelivery, n.cfg.QueueSize)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.refresh(ctx)
	for i := 0; i < n.cfg.Senders; i++ {
		n.senders.Add(1)
		go n.send()
	}
	n.refresher = &tickerService{name: "webhook refresh", interval: n.cfg.Refresh, log: n.log, clock: n.clock,
		skipFirst: true, round: func(ctx context.Context, _ time.Time) { n.refresh(ctx) }}
	_ = n.refresher.Start(n.ctx)
}

// Stop takes no more events and sends what is queued until ctx ends; what
// is left then is dropped (and counted). In-flight requests are cut. A
// second Stop does nothing.
func (n *webhookNotifier) Stop(ctx context.Context) {
	n.stopOnce.Do(func() { n.stopNow(ctx) })
}

func (n *webhookNotifier) stopNow(ctx context.Context) {
	n.refresher.Stop()
	n.mu.Lock()
	n.closed = true
	close(n.queue)
	n.mu.Unlock()
	done := make(chan struct{})
	go func() { n.senders.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
	if d := n.dropped.Load(); d > 0 {
		n.log.Warn("webhook requests dropped", "count", d)
	}
}

// refresh reads the webhooks table into the cache; on error the last
// read stays.
func (n *webhookNotifier) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := n.store.Webhooks(ctx)
	if err != nil {
		n.log.Warn("reading the webhooks table failed; keeping the last read", "err", err)
		return
	}
	m := map[string][]webhookTarget{}
	for _, r := range rows {
		u, err := parseWebhookURL(r.URL)
		if err != nil {
			n.log.Warn("webhook skipped: bad URL", "id", r.ID, "event", r.Event, "err", err)
			continue
		}
		m[r.Event] = append(m[r.Event], webhookTarget{id: r.ID, url: u})
	}
	n.hooks.Store(&m)
}

// notify is WebhookNotifier::notify: the body {"event","data","timestamp"}
// as json_encode writes it, queued for each URL of event. It never blocks.
// wants reports whether any webhook is registered for event (nil: none),
// so callers build an event's data only when it will be sent.
func (n *webhookNotifier) wants(event string) bool {
	if n == nil {
		return false
	}
	m := n.hooks.Load()
	return m != nil && len((*m)[event]) > 0
}

func (n *webhookNotifier) notify(event string, data *phpjson.Object) {
	if n == nil {
		return
	}
	m := n.hooks.Load()
	if m == nil || len((*m)[event]) == 0 {
		return
	}
	env := phpjson.NewObject()
	env.Set("event", phpjson.String(event))
	env.Set("data", phpjson.ObjectValue(data))
	env.Set("timestamp", phpjson.String(n.clock.Now().UTC().Format("2006-01-02T15:04:05Z")))
	body, err := phpjson.Encode(phpjson.ObjectValue(env))
	if err != nil {
		// json_encode would throw here too (invalid UTF-8 in a message).
		n.log.Warn("webhook not sent: its body cannot be encoded", "event", event, "err", err)
		return
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, t := range (*m)[event] {
		d := webhookDelivery{event: event, target: t, body: body}
		if n.closed {
			n.drop(d, "stopping")
			continue
		}
		select {
		case n.queue <- d:
		default:
			n.drop(d, "queue full")
		}
	}
}

// drop counts a request not sent and warns, at most once a second.
func (n *webhookNotifier) drop(d webhookDelivery, why string) {
	n.dropped.Add(1)
	n.observe(d, webhookDropped, nil)
	now := time.Now().UnixNano()
	if last := n.warnedAt.Load(); now-last > int64(time.Second) && n.warnedAt.CompareAndSwap(last, now) {
		n.log.Warn("webhook request dropped", "event", d.event, "why", why, "dropped_so_far", n.dropped.Load())
	}
}

// observe records one result of d (err: the failed try's error) for the
// dashboard, and for the metrics unless it is a retried try.
func (n *webhookNotifier) observe(d webhookDelivery, result string, err error) {
	n.deliveries.record(d.event, d.target, result, err, n.clock.Now())
	if n.obs != nil && result != webhookRetried {
		n.obs.ObserveWebhook(d.event, result)
	}
}

// send posts queued requests until the queue is closed and empty, or the
// grace of Stop is over (the rest are dropped).
func (n *webhookNotifier) send() {
	defer n.senders.Done()
	for d := range n.queue {
		if n.ctx.Err() != nil {
			n.drop(d, "stopped")
			continue
		}
		n.deliver(d)
	}
}

// deliver tries one request 1 + Retries times with doubling pauses.
func (n *webhookNotifier) deliver(d webhookDelivery) {
	pause := n.cfg.RetryBackoff
	for try := 0; ; try++ {
		err := postWebhook(n.ctx, n.dial, d.target.url, d.body, n.cfg.Timeout)
		if err == nil {
			n.observe(d, webhookSent, nil)
			return
		}
		if try >= max(0, n.cfg.Retries) || n.ctx.Err() != nil {
			n.observe(d, webhookFailed, err)
			n.log.Warn("webhook request failed", "event", d.event, "url", d.target.url.Redacted(), "tries", try+1, "err", err)
			return
		}
		n.observe(d, webhookRetried, err)
		select {
		case <-n.ctx.Done():
		case <-time.After(pause):
		}
		pause *= 2
	}
}
