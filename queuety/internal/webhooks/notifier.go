package webhooks

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
	store "github.com/queuety-go/queuety/sql"
)

// The webhook events the plugin's worker sends (WebhookNotifier::notify).
const (
	JobCompleted   = "job.completed"
	JobFailed      = "job.failed"
	JobBuried      = "job.buried"
	WorkflowFailed = "workflow.failed"
)

// Store is what the notifier reads: the registrations.
type Store interface {
	Webhooks(ctx context.Context) ([]store.WebhookRow, error)
}

// Params builds a Notifier; the durations and sizes are
// queuety.WebhookConfig's, validated.
type Params struct {
	Store Store
	Log   *slog.Logger
	// Clock stamps the bodies and the delivery records and ticks the
	// refresh loop.
	Clock clock.Clock
	// Timeout bounds one request; Retries more tries follow a retryable
	// failure (negative: none), the first RetryBackoff after it, doubled
	// after each.
	Timeout      time.Duration
	Retries      int
	RetryBackoff time.Duration
	// QueueSize requests may wait; Senders are in flight at most.
	QueueSize, Senders int
	// Refresh is how often the webhooks table is read again.
	Refresh time.Duration
	// Grace is how long Stop sends what is queued before it drops the rest
	// and cuts the requests in flight (0: at once); StopWithin takes its
	// bound from its caller instead.
	Grace time.Duration
	// Observe is told each request's result: sent, failed or dropped
	// (nil: nobody).
	Observe func(event, result string)
	// Dial opens connections (nil: net.Dialer's).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// delivery is one request to send.
type delivery struct {
	event  string
	target target
	body   []byte
}

// Notifier sends the plugin's webhook requests off the claim path: Notify
// encodes the body at once (its timestamp is the event's) and queues one
// delivery per URL registered for the event; senders post them. A nil
// *Notifier (webhooks off) takes every call and sends nothing.
type Notifier struct {
	p Params

	hooks atomic.Pointer[map[string][]target] // event → registrations, the last read
	// deliveries counts each registration's results for the dashboard.
	deliveries deliveries

	mu     sync.RWMutex // closed, queue and the send on it, sendCtx
	closed bool
	// queue and the senders are made by the first request to send
	// (startSenders): most workers have no webhook registered, and with
	// many sites a queue of QueueSize and Senders goroutines each was a
	// large share of an idle site's memory.
	queue   chan delivery
	sending atomic.Bool // queue made

	// sendCtx is cancelled when Stop's grace is over: in-flight requests
	// are cut, queued ones dropped. The senders' own context: they outlive
	// every caller's.
	sendCtx    context.Context
	cancelSend context.CancelFunc
	senders    sync.WaitGroup
	// refresher rereads the webhooks table every Refresh of the clock.
	refresher startstop.Loop

	// TestSignals report each read of the table to tests.
	TestSignals Signals

	// readElsewhere: another loop reads the webhooks table and hands the
	// rows to Load (queuety.Sites, for every site of a server in one
	// statement), so the notifier runs no refresh loop of its own.
	readElsewhere atomic.Bool

	started  atomic.Bool
	stopOnce sync.Once
	dropped  atomic.Int64
	warnedAt atomic.Int64 // unix nanos of the last drop warning
}

// Signals are what a Notifier reports to tests.
type Signals struct {
	// Refreshed carries how many registrations each good read of the
	// webhooks table found.
	Refreshed startstop.Signal[int]
}

// New returns a notifier; Start starts it.
func New(p *Params) *Notifier {
	n := &Notifier{p: *p}
	if n.p.Log == nil {
		n.p.Log = slog.New(slog.DiscardHandler)
	}
	n.p.Log = n.p.Log.With("service", "webhooks")
	if n.p.Clock == nil {
		n.p.Clock = clock.Real{}
	}
	if n.p.Dial == nil {
		n.p.Dial = (&net.Dialer{}).DialContext
	}
	n.refresher = startstop.Loop{Name: "webhook refresh", Every: n.p.Refresh, Log: n.p.Log, Clock: n.p.Clock,
		SkipFirst: true, Round: func(ctx context.Context, _ time.Time) { n.RunOnce(ctx) }}
	return n
}

// Start reads the webhooks table, then starts the senders and the refresh.
// It never fails: a failed read is logged and retried at the next refresh,
// as webhooks are best effort in the plugin too and never keep the worker
// from starting. A second Start does nothing.
func (n *Notifier) Start(ctx context.Context) error {
	if !n.started.CompareAndSwap(false, true) {
		return nil
	}
	n.mu.Lock()
	n.sendCtx, n.cancelSend = context.WithCancel(context.WithoutCancel(ctx))
	n.mu.Unlock()
	n.RunOnce(ctx)
	if n.readElsewhere.Load() {
		return nil
	}
	return n.refresher.Start(ctx)
}

// ReadElsewhere, before Start, leaves the refresh to the caller, which
// reads the webhooks table every Refresh and hands the rows to Load: the
// notifier still reads the table once at Start, and runs no loop of its
// own. queuety.Sites reads the webhooks of every site of a server in one
// statement this way.
func (n *Notifier) ReadElsewhere() { n.readElsewhere.Store(true) }

// Stop takes no more events and sends what is queued within the grace;
// what is left then is dropped (and counted), in-flight requests are cut.
// A second Stop, or a Stop before Start, does nothing.
func (n *Notifier) Stop() {
	if !n.started.Load() {
		return
	}
	// The wall clock: the grace bounds the process's shutdown, which no
	// fake clock moves.
	grace, cancel := context.WithTimeout(context.WithoutCancel(n.sendCtx), n.p.Grace)
	defer cancel()
	n.StopWithin(grace)
}

// StopWithin is Stop with the drain bounded by ctx instead of the grace:
// a worker's stop hands it what is left of its own shutdown grace.
func (n *Notifier) StopWithin(ctx context.Context) {
	if !n.started.Load() {
		return
	}
	n.stopOnce.Do(func() { n.stop(ctx) })
}

func (n *Notifier) stop(ctx context.Context) {
	n.refresher.Stop()
	n.mu.Lock()
	n.closed = true
	if n.queue != nil {
		close(n.queue)
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() { n.senders.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancelSend()
		<-done
	}
	n.cancelSend()
	if d := n.dropped.Load(); d > 0 {
		n.p.Log.Warn("webhook requests dropped", "count", d)
	}
}

// RefreshTimeout bounds one read of the webhooks table.
const RefreshTimeout = 10 * time.Second

// RunOnce reads the webhooks table into the cache; on error the last read
// stays.
func (n *Notifier) RunOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, RefreshTimeout)
	defer cancel()
	rows, err := n.p.Store.Webhooks(ctx)
	if err != nil {
		n.p.Log.Warn("reading the webhooks table failed; keeping the last read", "err", err)
		return
	}
	n.Load(rows)
}

// Load replaces the cache with rows, a read of the webhooks table (oldest
// first, as Store.Webhooks returns them).
func (n *Notifier) Load(rows []store.WebhookRow) {
	m := map[string][]target{}
	for _, r := range rows {
		u, err := ParseURL(r.URL)
		if err != nil {
			n.p.Log.Warn("webhook skipped: bad URL", "id", r.ID, "event", r.Event, "err", err)
			continue
		}
		m[r.Event] = append(m[r.Event], target{id: r.ID, url: u})
	}
	n.hooks.Store(&m)
	n.TestSignals.Refreshed.Signal(len(rows))
}

// Wants reports whether any webhook is registered for event (nil: none),
// so callers build an event's data only when it will be sent.
func (n *Notifier) Wants(event string) bool {
	if n == nil {
		return false
	}
	m := n.hooks.Load()
	return m != nil && len((*m)[event]) > 0
}

// Notify is WebhookNotifier::notify: the body {"event","data","timestamp"}
// as json_encode writes it, queued for each URL of event. It never blocks.
func (n *Notifier) Notify(event string, data *phpjson.Object) {
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
	env.Set("timestamp", phpjson.String(n.p.Clock.Now().UTC().Format("2006-01-02T15:04:05Z")))
	body, err := phpjson.Encode(phpjson.ObjectValue(env))
	if err != nil {
		// json_encode would throw here too (invalid UTF-8 in a message).
		n.p.Log.Warn("webhook not sent: its body cannot be encoded", "event", event, "err", err)
		return
	}
	if !n.sending.Load() {
		n.startSenders()
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, t := range (*m)[event] {
		d := delivery{event: event, target: t, body: body}
		switch {
		case n.closed:
			n.drop(d, "stopping")
			continue
		case n.queue == nil:
			n.drop(d, "not started")
			continue
		}
		select {
		case n.queue <- d:
		default:
			n.drop(d, "queue full")
		}
	}
}

// startSenders makes the queue and starts the senders, once, between
// Start and Stop.
func (n *Notifier) startSenders() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queue != nil || n.closed || n.sendCtx == nil {
		return
	}
	n.queue = make(chan delivery, n.p.QueueSize)
	for range n.p.Senders {
		n.senders.Add(1)
		go n.send()
	}
	n.sending.Store(true)
}

// Deliveries is what the notifier did with each registration since it was
// built, by webhook id; nil on a nil notifier. Safe to call while it runs.
func (n *Notifier) Deliveries() []Delivery {
	if n == nil {
		return nil
	}
	return n.deliveries.snapshot()
}

// drop counts a request not sent and warns, at most once a second (of the
// wall clock: it rate-limits a log, it schedules nothing).
func (n *Notifier) drop(d delivery, why string) {
	n.dropped.Add(1)
	n.observe(d, resultDropped, nil)
	now := time.Now().UnixNano()
	if last := n.warnedAt.Load(); now-last > int64(time.Second) && n.warnedAt.CompareAndSwap(last, now) {
		n.p.Log.Warn("webhook request dropped", "event", d.event, "why", why, "dropped_so_far", n.dropped.Load())
	}
}

// observe records one result of d (err: the failed try's error) for the
// dashboard, and for the metrics unless it is a retried try.
func (n *Notifier) observe(d delivery, result string, err error) {
	n.deliveries.record(d.event, d.target, result, err, n.p.Clock.Now())
	if n.p.Observe != nil && result != resultRetried {
		n.p.Observe(d.event, result)
	}
}

// send posts queued requests until the queue is closed and empty, or the
// grace of Stop is over (the rest are dropped).
func (n *Notifier) send() {
	defer n.senders.Done()
	for d := range n.queue {
		if n.sendCtx.Err() != nil {
			n.drop(d, "stopped")
			continue
		}
		n.deliver(d)
	}
}

// deliver tries one request 1 + Retries times with doubling pauses (of
// the wall clock, as the requests' own timeouts).
func (n *Notifier) deliver(d delivery) {
	pause := n.p.RetryBackoff
	for try := 0; ; try++ {
		err := post(n.sendCtx, n.p.Dial, d.target.url, d.body, n.p.Timeout)
		if err == nil {
			n.observe(d, resultSent, nil)
			return
		}
		if try >= max(0, n.p.Retries) || n.sendCtx.Err() != nil {
			n.observe(d, resultFailed, err)
			n.p.Log.Warn("webhook request failed", "event", d.event, "url", d.target.url.Redacted(), "tries", try+1, "err", err)
			return
		}
		n.observe(d, resultRetried, err)
		select {
		case <-n.sendCtx.Done():
		case <-time.After(pause):
		}
		pause *= 2
	}
}
