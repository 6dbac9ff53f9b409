package queuety

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/queuety/internal/webhooks"
)

// The webhook events the plugin's worker sends (WebhookNotifier::notify).
const (
	WebhookJobCompleted   = webhooks.JobCompleted
	WebhookJobFailed      = webhooks.JobFailed
	WebhookJobBuried      = webhooks.JobBuried
	WebhookWorkflowFailed = webhooks.WorkflowFailed
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

// WebhookDelivery is what this process's worker did with one webhook
// registration since it started. Neither the plugin nor the daemon keeps a
// delivery log in the tables; these counts live in memory (the dashboard
// shows them, the metric queuety_webhook_requests_total sums them by event
// and result), so other processes' deliveries are not here.
type WebhookDelivery = webhooks.Delivery

// WebhookDeliveries is what this worker sent to each webhook since it was
// built, by webhook id; nil when its webhooks are off
// (Config.Webhooks.Disabled). Safe to call while the worker runs.
func (w *Worker) WebhookDeliveries() []WebhookDelivery { return w.hooks.Deliveries() }

// newWebhookNotifier is the worker's notifier (queuety/internal/webhooks)
// over cfg.Webhooks: a service like the worker's loops.
func newWebhookNotifier(s webhooks.Store, cfg Config, log *slog.Logger) *webhooks.Notifier {
	return webhooks.New(webhookParams(s, cfg, log))
}

// webhookParams are the notifier's params of cfg. Its own Stop drains the
// queued requests within the shutdown grace, and at least one request
// timeout; a worker's stop gives it less (stopWebhooks).
func webhookParams(s webhooks.Store, cfg Config, log *slog.Logger) *webhooks.Params {
	wc := cfg.Webhooks
	p := &webhooks.Params{Store: s, Log: log, Clock: cfg.Clock, Timeout: wc.Timeout, Retries: wc.Retries,
		RetryBackoff: wc.RetryBackoff, QueueSize: wc.QueueSize, Senders: wc.Senders, Refresh: wc.Refresh,
		Grace: max(cfg.ShutdownGrace, wc.Timeout)}
	if o, ok := cfg.Observer.(WebhookObserver); ok {
		p.Observe = o.ObserveWebhook
	}
	return p
}

// stopWebhooks stops the notifier, draining the queued requests within
// what is left of the shutdown grace (grace: Stop's, begun when it did),
// and at least one request timeout, so the last jobs' webhooks get their
// try without a shutdown whose jobs used the grace taking a second one.
func (w *Worker) stopWebhooks(grace context.Context) {
	if w.hooks == nil {
		return
	}
	ctx, cancel := webhookDrain(grace, w.cfg.Webhooks.Timeout, time.Now())
	defer cancel()
	w.hooks.StopWithin(ctx)
}

// webhookDrain bounds the notifier's drain at now: grace while at least
// one request timeout of it is left, else one timeout from now. The grace
// is of the wall clock (context.WithTimeout), so is now.
func webhookDrain(grace context.Context, timeout time.Duration, now time.Time) (context.Context, context.CancelFunc) {
	if dl, ok := grace.Deadline(); ok && dl.Sub(now) >= timeout {
		return grace, func() {}
	}
	// What outlives the grace: its values, not its end.
	return context.WithDeadline(context.WithoutCancel(grace), now.Add(timeout))
}
