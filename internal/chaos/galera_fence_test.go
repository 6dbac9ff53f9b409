//go:build galera

package chaos

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
)

// causalReads is the node's count of causal waits (wsrep_sync_wait).
func causalReads(t *testing.T, db *sql.DB) int {
	t.Helper()
	var name string
	var n int
	require.NoError(t, db.QueryRow("SHOW GLOBAL STATUS LIKE 'wsrep_causal_reads'").Scan(&name, &n))
	return n
}

// On a node, the writes that refuse an attempt not holding its row (a
// completion, a failure, a hand-back) each wait for the node to catch up
// with the cluster first, counted by the node's wsrep_causal_reads. The
// same wait asked for inside a transaction is not made, which is why the
// daemon makes it before BEGIN (a completion refused on a node that had
// not applied its claim left the row processing in writer-kill rounds).
func TestChaosGaleraFenceReadsAreCausal(t *testing.T) {
	c := newGalera(t)
	dsns := c.createDB(t, "fence")
	prepare(t, dsns[0])
	ctx := context.Background()
	node, err := sql.Open("mysql", dsns[1])
	require.NoError(t, err)
	defer node.Close()

	tx, err := node.BeginTx(ctx, nil)
	require.NoError(t, err)
	before := causalReads(t, node)
	var n int
	require.NoError(t, tx.QueryRow("SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM "+jobsTable).Scan(&n))
	require.NoError(t, tx.Rollback())
	require.Equal(t, before, causalReads(t, node), "inside a transaction the node does not wait")

	db, err := store.Open(ctx, dsns[1], 4, nil)
	require.NoError(t, err)
	defer db.Close()
	tables, err := store.Naming{DBPrefix: "wp_"}.Resolve()
	require.NoError(t, err)
	st, err := store.New(db, tables, clock.Real{})
	require.NoError(t, err)
	co, err := st.DetectCoordination(ctx)
	require.NoError(t, err)
	require.Equal(t, store.CoordinationRows, co)
	st.SetCoordination(co)

	insertJobs(t, openDB(t, dsns[0]), 1)
	var id int64
	require.NoError(t, openDB(t, dsns[1]).Get(&id, "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT MAX(id) FROM "+jobsTable))
	lost := store.Attempt{ID: id, Attempt: 1, WorkerID: "nobody"}
	for name, write := range map[string]func() error{
		"completion": func() error {
			res, err := st.CompleteJobs(ctx, []store.Completion{{Attempt: lost, Log: store.LogRow{JobID: store.Int(id), Event: store.EventCompleted}}})
			require.Equal(t, []int64{id}, res.Refused)
			return err
		},
		"failure": func() error {
			applied, err := st.FailJob(ctx, store.Failure{Attempt: lost, Delay: time.Second})
			require.False(t, applied)
			return err
		},
		"hand-back": func() error {
			n, err := st.UnclaimJobs(ctx, []store.Attempt{lost})
			require.Zero(t, n)
			return err
		},
	} {
		before := causalReads(t, node)
		require.NoError(t, write(), name)
		require.Greater(t, causalReads(t, node), before, "%s: the node waited before reading the fence", name)
	}
}
