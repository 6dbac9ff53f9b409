-- The webhooks table, as the plugin's WebhookNotifier reads and writes it.
-- The notifier of `work` reads the whole (small) table into a cache and
-- refreshes it now and then, so a hook registered from PHP or the CLI is
-- seen without a restart.

-- name: webhooks-list
SELECT id, event, url, created_at FROM {webhooks} ORDER BY id

-- name: webhooks-get
SELECT id, event, url, created_at FROM {webhooks} WHERE id = ?

-- name: webhooks-insert
-- WebhookNotifier::register: created_at is the column default, as there.
INSERT INTO {webhooks} (event, url) VALUES (?, ?)

-- name: webhooks-delete
DELETE FROM {webhooks} WHERE id = ?
