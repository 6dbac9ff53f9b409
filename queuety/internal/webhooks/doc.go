// Package webhooks sends the plugin's webhooks from a worker: the events
// its worker posts (WebhookNotifier::notify), with the same request bytes
// PHP's HTTP stream wrapper writes, from a queue and a few senders so a
// slow or dead endpoint never holds up a job.
//
// A Notifier is a service like the worker's other loops: Start reads the
// webhooks table and starts the senders and the table's refresh loop (on
// the injected clock); Stop takes no more events and drains the queue
// within its configured grace (StopWithin: within its caller's bound). It counts each registration's results in
// memory (Deliveries) for the dashboard. The worker's public webhook
// names (queuety.WebhookConfig, the event names, the Client's webhook
// API) stay in queuety, which builds the Notifier from them.
package webhooks
