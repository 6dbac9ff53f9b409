package queuety

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuety-go/queuety/queuety/internal/rowview"
	"github.com/queuety-go/queuety/queuety/internal/webhooks"
	store "github.com/queuety-go/queuety/sql"
)

// WebhookRow is one registered webhook.
type WebhookRow = rowview.Webhook

// ErrWebhookNotFound is returned for a webhook id with no row.
var ErrWebhookNotFound = store.ErrWebhookNotFound

// Webhooks lists the registered webhooks, oldest first (Queuety::list_webhooks).
func (c *Client) Webhooks(ctx context.Context) ([]WebhookRow, error) {
	rows, err := c.store.Webhooks(ctx)
	return rowview.Webhooks(rows), err
}

// Webhook returns one webhook, or ErrWebhookNotFound.
func (c *Client) Webhook(ctx context.Context, id int64) (*WebhookRow, error) {
	row, err := c.store.Webhook(ctx, id)
	if err != nil {
		return nil, err
	}
	w := rowview.Webhook(*row)
	return &w, nil
}

// AddWebhook registers url for event (Queuety::register_webhook) and
// returns its id. The event must be one the worker sends and the URL http
// or https with a host; the plugin stores anything, and a hook it can
// never send is a mistake better caught here. A running `work` sees it
// within WebhookConfig.Refresh.
func (c *Client) AddWebhook(ctx context.Context, event, url string) (int64, error) {
	if err := CheckWebhook(event, url); err != nil {
		return 0, err
	}
	return c.store.AddWebhook(ctx, event, url)
}

// CheckWebhook checks a webhook's event and URL before they are stored.
func CheckWebhook(event, url string) error {
	if !slices.Contains(WebhookEvents, event) {
		return fmt.Errorf("webhook event %q: want one of %s", event, strings.Join(WebhookEvents, ", "))
	}
	if len(url) > 2048 {
		return fmt.Errorf("webhook URL: longer than 2048 characters")
	}
	_, err := webhooks.ParseURL(url)
	return err
}

// RemoveWebhook deletes a webhook (Queuety::remove_webhook);
// ErrWebhookNotFound when there is none.
func (c *Client) RemoveWebhook(ctx context.Context, id int64) error {
	return c.store.RemoveWebhook(ctx, id)
}
