package webhooks

import (
	"cmp"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Delivery is what this process's worker did with one webhook
// registration since it started. Neither the plugin nor the daemon keeps a
// delivery log in the tables; these counts live in memory (the dashboard
// shows them, the metric queuety_webhook_requests_total sums them by event
// and result), so other processes' deliveries are not here.
type Delivery struct {
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

// target is one registration the notifier posts an event to.
type target struct {
	id  int64
	url *url.URL
}

// deliveries keeps a Delivery per registration; the senders
// record into it concurrently.
type deliveries struct {
	mu sync.Mutex
	by map[int64]*Delivery
}

// webhook results as the notifier records them (and the metric names
// them).
const (
	resultSent    = "sent"
	resultFailed  = "failed"
	resultDropped = "dropped"
	resultRetried = "retried" // a failed try that is tried again; not a metric result
)

func (d *deliveries) record(event string, t target, result string, err error, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[int64]*Delivery{}
	}
	s := d.by[t.id]
	if s == nil {
		s = &Delivery{WebhookID: t.id, Event: event, URL: t.url.Redacted()}
		d.by[t.id] = s
	}
	switch result {
	case resultSent:
		s.Sent++
	case resultFailed:
		s.Failed++
	case resultDropped:
		s.Dropped++
	case resultRetried:
		s.Retried++
	}
	s.LastAt = at
	if err != nil {
		s.LastError, s.LastErrorAt = err.Error(), at
	}
}

// snapshot copies the deliveries, by webhook id.
func (d *deliveries) snapshot() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Delivery, 0, len(d.by))
	for _, s := range d.by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(a.WebhookID, b.WebhookID) })
	return out
}
