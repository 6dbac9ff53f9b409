package queuety

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// The Client's reads answer views of exactly the rows the store reads:
// every column a view keeps, nullable ones as nil or a pointer to the
// value.
func TestClientViewsOfRows(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	first, err := c.Dispatch(ctx, "views", map[string]int{"n": 1}, OnQueue("mail"), WithPriority(PriorityHigh))
	require.NoError(t, err)
	second, err := c.Dispatch(ctx, "views", map[string]int{"n": 2}, OnQueue("mail"), After(first.ID), ConcurrencyGroup("g", 2))
	require.NoError(t, err)
	require.NoError(t, c.BuryJob(ctx, first.ID, "by hand"))

	for _, id := range []int64{first.ID, second.ID} {
		row, err := c.store.GetJob(ctx, id)
		require.NoError(t, err)
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rowview.Job(row), *j)
		require.Equal(t, *row, rowview.JobRow(j), "a view keeps every stored column (the virtual session_pending and session_processing are NULL on these rows)")

		logs, err := c.store.JobLogs(ctx, id)
		require.NoError(t, err)
		entries, err := c.JobLogs(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rowview.Logs(logs), entries)
	}
	j, err := c.Job(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, &first.ID, j.DependsOn)
	require.Equal(t, "g", *j.ConcurrencyGroup)
	require.Nil(t, j.WorkflowID)
	require.Nil(t, j.ReservedAt)

	b, err := c.Job(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusBuried, b.Status)
	require.Equal(t, "by hand", *b.ErrorMessage)

	list, err := c.Jobs(ctx, JobFilter{Queue: "mail"})
	require.NoError(t, err)
	rows, err := c.store.ListJobs(ctx, store.ListFilter{Queue: "mail"})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, rowview.Jobs(rows), list)

	byID, err := c.JobsByID(ctx, []int64{first.ID, second.ID})
	require.NoError(t, err)
	require.ElementsMatch(t, list, byID)

	stats, err := c.Stats(ctx)
	require.NoError(t, err)
	raw, err := c.store.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, rowview.Queues(raw), stats)

	stuck, err := c.StuckJobsByID(ctx, []int64{second.ID})
	require.NoError(t, err)
	require.Equal(t, store.StuckDependencyBuried, stuck[second.ID].Kind)
	require.Contains(t, stuck[second.ID].Reason, "is buried")
}

// DispatchRow's view holds the columns the store would insert.
func TestDispatchRowView(t *testing.T) {
	t.Parallel()
	opts := []DispatchOption{OnQueue("q"), After(7), InBatch(3), ConcurrencyGroup("g", 2), CostUnits(4), MaxAttempts(5), Unique()}
	p, err := dispatchRow("h", map[string]int{"a": 1}, opts)
	require.NoError(t, err)
	v, err := DispatchRow("h", map[string]int{"a": 1}, opts...)
	require.NoError(t, err)
	require.Equal(t, rowview.Insert(&p), v)
	require.Equal(t, InsertRow{Queue: "q", Handler: "h", Payload: []byte(`{"a":1}`), MaxAttempts: 5, Unique: true,
		DependsOn: ptrTo(int64(7)), BatchID: ptrTo(int64(3)), ConcurrencyGroup: "g", ConcurrencyLimit: 2, CostUnits: 4}, v)
}

func ptrTo[T any](v T) *T { return &v }
