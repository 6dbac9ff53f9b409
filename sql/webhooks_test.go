package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebhookRows: register, list (oldest first), get, remove, as the
// plugin's WebhookNotifier does; removing a missing id says so.
func TestWebhookRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, err := e.s.AddWebhook(e.ctx, "job.completed", "http://127.0.0.1:9/a")
	require.NoError(t, err)
	b, err := e.s.AddWebhook(e.ctx, "job.buried", "https://example.com/b?x=1")
	require.NoError(t, err)
	require.Greater(t, b, a)

	rows, err := e.s.Webhooks(e.ctx)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, "job.completed", rows[0].Event)
	require.Equal(t, "https://example.com/b?x=1", rows[1].URL)
	require.False(t, rows[0].CreatedAt.IsZero())

	w, err := e.s.Webhook(e.ctx, b)
	require.NoError(t, err)
	require.Equal(t, rows[1], *w)

	require.NoError(t, e.s.RemoveWebhook(e.ctx, a))
	require.ErrorIs(t, e.s.RemoveWebhook(e.ctx, a), ErrWebhookNotFound)
	_, err = e.s.Webhook(e.ctx, a)
	require.ErrorIs(t, err, ErrWebhookNotFound)
	rows, err = e.s.Webhooks(e.ctx)
	require.NoError(t, err)
	require.Len(t, rows, 1)
}
