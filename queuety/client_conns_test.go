package queuety

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// MaxConns caps every connection a client opens: the pipeline's (local
// activities' outcome transactions) come out of it, one in 16, and only
// once the main handle keeps the two that claims and completions need.
func TestMaxConnsCoversThePipeline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ max, main, pipe int }{{2, 2, 0}, {3, 2, 1}, {5, 4, 1}, {20, 19, 1}, {64, 60, 4}} {
		main, pipe := splitConns(c.max)
		require.Equal(t, [2]int{c.main, c.pipe}, [2]int{main, pipe}, "MaxConns %d", c.max)
	}
	client, err := Open(context.Background(), Config{DSN: testdb.New(t), MaxConns: 5, RescueSchedule: "off"})
	require.NoError(t, err)
	defer client.Close()
	require.Equal(t, 4, client.db.Stats().MaxOpenConnections)
	require.Equal(t, 1, client.pipe.Stats().MaxOpenConnections)
}
