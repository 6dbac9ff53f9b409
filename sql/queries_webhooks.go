package store

// Query names of queries_webhooks.sql.
const (
	qWebhooksList   = "webhooks-list"
	qWebhooksGet    = "webhooks-get"
	qWebhooksInsert = "webhooks-insert"
	qWebhooksDelete = "webhooks-delete"
)
