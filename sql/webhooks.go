package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrWebhookNotFound is returned for a webhook id with no row.
var ErrWebhookNotFound = errors.New("webhook not found")

// WebhookRow is one row of the webhooks table.
type WebhookRow struct {
	ID        int64     `db:"id" json:"id"`
	Event     string    `db:"event" json:"event"`
	URL       string    `db:"url" json:"url"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

// Webhooks returns every registered webhook, oldest first
// (WebhookNotifier::list).
func (s *Store) Webhooks(ctx context.Context) ([]WebhookRow, error) {
	rows := []WebhookRow{}
	err := s.db.SelectContext(ctx, &rows, s.query(qWebhooksList))
	return rows, err
}

// Webhook returns one webhook, or ErrWebhookNotFound.
func (s *Store) Webhook(ctx context.Context, id int64) (*WebhookRow, error) {
	var w WebhookRow
	err := s.db.GetContext(ctx, &w, s.query(qWebhooksGet), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrWebhookNotFound
	}
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// AddWebhook registers url for event and returns the new id
// (WebhookNotifier::register).
func (s *Store) AddWebhook(ctx context.Context, event, url string) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.query(qWebhooksInsert), event, url)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// RemoveWebhook deletes a webhook; ErrWebhookNotFound when there was none
// (WebhookNotifier::remove says nothing either way).
func (s *Store) RemoveWebhook(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, s.query(qWebhooksDelete), id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrWebhookNotFound
	}
	return err
}
