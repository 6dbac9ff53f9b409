package metrics

import "github.com/prometheus/client_golang/prometheus"

func newWebhookCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queuety_webhook_requests_total",
		Help: "Webhook requests of this process by event and result: sent (answered), failed (given up after the retries), dropped (the queue was full, or the worker stopped first).",
	}, []string{"event", "result"})
}

// ObserveWebhook counts one webhook request's result. The events are the
// four the worker sends, so the labels stay few.
func (c *Counters) ObserveWebhook(event, result string) {
	c.webhooks.WithLabelValues(event, result).Inc()
}
