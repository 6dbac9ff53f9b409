package queuety

import (
	"cmp"
	"net/url"
	"slices"
	"sync"
	"time"
)

// WebhookDelivery is what this process's worker did with one webhook
// registration since it started. Neither the plugin nor the daemon keeps a
// delivery log in the tables; these counts live in memory (the dashboard
// shows them, the metric queuety_webhook_requests_total sums them by event
// and result), so other processes' deliveries are not here.
type WebhookDelivery struct {
	WebhookID int64
	Event     string
	URL       string // credentials redacted
	// Sent requests got an answer below 500 (and not 429); Failed ones
	// were given up after the retries; Dropped ones were never tried
	// (the queue was full, or the worker stopped first). Retried counts
	// tries that failed and were tried again.
	Sent, Failed, Dropped, Retried int
	// LastAt is when the last result of any kind came.
	LastAt time.Time
	// LastError is the last failed try's error (a retried one too), and
	// LastErrorAt when it came; empty when no try failed.
	LastError   string
	LastErrorAt time.Time
}

// webhookTarget is one registration the notifier posts an event to.
type webhookTarget struct {
	id  int64
	url *url.URL
}

// webhookDeliveries keeps a WebhookDelivery per registration; the senders
// record into it concurrently.
type webhookDeliveries struct {
	mu sync.Mutex
	by map[int64]*WebhookDelivery
}

// webhook results as the notifier records them (and the metric names
// them).
const (
	webhookSent    = "sent"
	webhookFailed  = "failed"
	webhookDropped = "dropped"
	webhookRetried = "retried" // a failed try that is tried again; not a metric result
)

func (d *webhookDeliveries) record(event string, t webhookTarget, result string, err error, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[int64]*WebhookDelivery{}
	}
	s := d.by[t.id]
	if s == nil {
		s = &WebhookDelivery{WebhookID: t.id, Event: event, URL: t.url.Redacted()}
		d.by[t.id] = s
	}
	switch result {
	case webhookSent:
		s.Sent++
	case webhookFailed:
		s.Failed++
	case webhookDropped:
		s.Dropped++
	case webhookRetried:
		s.Retried++
	}
	s.LastAt = at
	if err != nil {
		s.LastError, s.LastErrorAt = err.Error(), at
	}
}

// snapshot copies the deliveries, by webhook id.
func (d *webhookDeliveries) snapshot() []WebhookDelivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]WebhookDelivery, 0, len(d.by))
	for _, s := range d.by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b WebhookDelivery) int { return cmp.Compare(a.WebhookID, b.WebhookID) })
	return out
}

// WebhookDeliveries is what this worker sent to each webhook since it was
// built, by webhook id; nil when its webhooks are off
// (Config.Webhooks.Disabled). Safe to call while the worker runs.
func (w *Worker) WebhookDeliveries() []WebhookDelivery {
	if w.hooks == nil {
		return nil
	}
	return w.hooks.deliveries.snapshot()
}
