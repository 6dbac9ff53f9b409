package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWebhookCounter(t *testing.T) {
	m := New(Config{Tables: &countingTables{}})
	m.ObserveWebhook("job.completed", "sent")
	m.ObserveWebhook("job.completed", "dropped")
	m.ObserveWebhook("job.completed", "dropped")
	text := scrapeText(t, m)
	require.Contains(t, text, `queuety_webhook_requests_total{event="job.completed",result="dropped"} 2`)
	require.Contains(t, text, `queuety_webhook_requests_total{event="job.completed",result="sent"} 1`)
}
