package phppool_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

// lockFixture is the part of a recording this replay reads.
type lockFixture struct {
	Snapshots []struct {
		After string           `json:"after"`
		Jobs  []map[string]any `json:"jobs"`
		Logs  []map[string]any `json:"logs"`
		Locks []map[string]any `json:"locks"`
	} `json:"snapshots"`
}

// TestReplayJobMiddlewareLocks replays job_middleware_locks: the plugin's
// Contracts\Job rows with WithoutOverlapping and ThrottlesExceptions run in
// the pool, one job at a time as the recording's worker ran them, and the
// jobs, logs and locks rows end as recorded. One difference, the plugin bug
// the recording shows: a job finding the lock held is completed without
// running (the plugin leaves it processing).
func TestReplayJobMiddlewareLocks(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../testdata/queuety-plugin/job_middleware_locks.json")
	require.NoError(t, err)
	var f lockFixture
	require.NoError(t, json.Unmarshal(b, &f))
	require.Len(t, f.Snapshots, 8)

	c := newClient(t, func(cfg *queuety.Config) { cfg.Concurrency = 1 })
	pool := dbAppPool(t, c, "testdata/locks-app.php")
	startWorker(t, c, pool)
	db := clientstore.Of(c).DB()
	tables := clientstore.Of(c).Tables()

	// insert writes a recorded job row as the plugin dispatched it.
	insert := func(row map[string]any) {
		_, err := db.Exec("INSERT INTO `"+tables["jobs"]+"` (id, queue, handler, payload, priority, status, attempts, max_attempts, available_at, cost_units, created_at) VALUES (?,?,?,?,?,?,?,?,NOW(),?,NOW())",
			row["id"], row["queue"], row["handler"], row["payload"], row["priority"], row["status"], row["attempts"], row["max_attempts"], row["cost_units"])
		require.NoError(t, err)
	}
	settled := func(id any, status string, attempts int) {
		require.Eventually(t, func() bool {
			var s string
			var a int
			return db.QueryRow("SELECT status, attempts FROM `"+tables["jobs"]+"` WHERE id = ?", id).Scan(&s, &a) == nil && s == status && a == attempts
		}, 20*time.Second, 20*time.Millisecond, "job %v %s", id, status)
	}
	compare := func(step int) {
		snap := f.Snapshots[step]
		for _, w := range snap.Jobs {
			var status, errMsg any
			var attempts int
			err := db.QueryRow("SELECT status, attempts, error_message FROM `"+tables["jobs"]+"` WHERE id = ?", w["id"]).Scan(&status, &attempts, &errMsg)
			if errors.Is(err, sql.ErrNoRows) && w["status"] == "pending" && w["attempts"] == float64(0) {
				continue // inserted when the replay reaches its turn (the worker would run it at once)
			}
			require.NoError(t, err)
			want := w["status"]
			if step >= 4 && w["id"] == float64(2) {
				want = "completed" // the fix: skipped, not left processing
			}
			require.Equal(t, want, string(status.([]byte)), "%s: job %v status", snap.After, w["id"])
			require.Equal(t, int(w["attempts"].(float64)), attempts, "%s: job %v attempts", snap.After, w["id"])
		}
		rows, err := db.Query("SELECT job_id, event, attempt, error_message FROM `" + tables["logs"] + "` ORDER BY id")
		require.NoError(t, err)
		var got []string
		for rows.Next() {
			var job, attempt any
			var event string
			var msg any
			require.NoError(t, rows.Scan(&job, &event, &attempt, &msg))
			got = append(got, fmt.Sprintf("%s %s %s %s", str(job), event, str(attempt), str(msg)))
		}
		require.NoError(t, rows.Close())
		var want []string
		for _, l := range snap.Logs {
			want = append(want, fmt.Sprintf("%s %s %s %s", str(l["job_id"]), l["event"], str(l["attempt"]), str(l["error_message"])))
			if step >= 4 && l["job_id"] == float64(2) && l["event"] == "started" {
				want = append(want, "2 completed 1 <nil>")
			}
		}
		require.Equal(t, want, got, "%s: log rows", snap.After)

		lrows, err := db.Query("SELECT lock_key, owner, TIMESTAMPDIFF(SECOND, acquired_at, expires_at) FROM `" + tables["locks"] + "` ORDER BY lock_key")
		require.NoError(t, err)
		var locks []string
		for lrows.Next() {
			var key, owner string
			var ttl int
			require.NoError(t, lrows.Scan(&key, &owner, &ttl))
			locks = append(locks, fmt.Sprintf("%s %s %d", key, owner, ttl))
		}
		require.NoError(t, lrows.Close())
		var wantLocks []string
		for _, l := range snap.Locks {
			if l["owner"] == "other-worker" || strings.HasPrefix(l["lock_key"].(string), "throttle_exceptions:") {
				acq, _ := time.Parse(time.DateTime, l["acquired_at"].(string))
				exp, _ := time.Parse(time.DateTime, l["expires_at"].(string))
				wantLocks = append(wantLocks, fmt.Sprintf("%s %s %d", l["lock_key"], l["owner"], int(exp.Sub(acq).Seconds())))
			}
		}
		require.Equal(t, wantLocks, locks, "%s: locks rows", snap.After)
	}

	// Step 1 is a snapshot from inside handle(): the job's own lock row.
	own := f.Snapshots[1].Locks[0]
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), own["owner"])

	insert(f.Snapshots[0].Jobs[0])
	settled(1, "completed", 1)
	compare(2)
	_, err = db.Exec("INSERT INTO `" + tables["locks"] + "` (lock_key, owner, acquired_at, expires_at) VALUES ('nightly-report', 'other-worker', NOW(), NOW() + INTERVAL 60 SECOND)")
	require.NoError(t, err)
	compare(3)
	insert(f.Snapshots[0].Jobs[1])
	settled(2, "completed", 1)
	compare(4)
	insert(f.Snapshots[5].Jobs[2])
	settled(3, "pending", 1)
	compare(6)
	insert(f.Snapshots[5].Jobs[3])
	settled(4, "pending", 1)
	compare(7)
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case []byte:
		return string(x)
	case float64:
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprint(v)
}
