package store

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInsertJobDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The dispatch defaults of Queue::dispatch, as the client fills them in.
	id, existing, err := e.s.InsertJob(e.ctx, InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3, CostUnits: 1})
	require.NoError(t, err)
	require.False(t, existing)
	require.Positive(t, id)

	j := e.job(id)
	require.Equal(t, id, j.ID)
	require.Equal(t, "default", j.Queue)
	require.Equal(t, "noop", j.Handler)
	require.Equal(t, "[]", j.Payload)
	require.False(t, j.PayloadHash.Valid)
	require.Equal(t, 0, j.Priority)
	require.Equal(t, StatusPending, j.Status)
	require.Equal(t, 0, j.Attempts)
	require.Equal(t, 3, j.MaxAttempts)
	require.Equal(t, e.clk.Now(), j.AvailableAt)
	require.False(t, j.ReservedAt.Valid)
	require.False(t, j.CompletedAt.Valid)
	require.False(t, j.FailedAt.Valid)
	require.False(t, j.ErrorMessage.Valid)
	require.False(t, j.WorkflowID.Valid)
	require.False(t, j.StepIndex.Valid)
	require.False(t, j.DependsOn.Valid)
	require.False(t, j.BatchID.Valid)
	require.False(t, j.ConcurrencyGroup.Valid)
	require.False(t, j.ConcurrencyLimit.Valid)
	require.Equal(t, int64(1), j.CostUnits)
	require.False(t, j.HeartbeatData.Valid)
	require.False(t, j.ReservedBy.Valid)
	require.WithinDuration(t, time.Now().UTC(), j.CreatedAt, time.Minute, "created_at is the DB default")
}

func TestInsertJobRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	payload := []byte(`{"url":"http:\/\/x\/y","n":"Zo\u00eb","html":"<a href='x'>&<\/a>","empty":[]}`)
	id, _, err := e.s.InsertJob(e.ctx, InsertJob{
		Queue:            "mail",
		Handler:          `App\Jobs\SendEmail`,
		Payload:          payload,
		Priority:         3,
		Delay:            2 * time.Minute,
		MaxAttempts:      255,
		Unique:           true,
		WorkflowID:       Int(7),
		StepIndex:        Int(2),
		DependsOn:        Int(11),
		BatchID:          Int(13),
		ConcurrencyGroup: "  tenant-1  ",
		ConcurrencyLimit: 65535,
		CostUnits:        9,
	})
	require.NoError(t, err)
	j := e.job(id)
	require.Equal(t, "mail", j.Queue)
	require.Equal(t, `App\Jobs\SendEmail`, j.Handler)
	require.Equal(t, string(payload), j.Payload, "payload bytes stored exactly")
	require.Equal(t, String(PayloadHash(payload)), j.PayloadHash)
	require.Equal(t, 3, j.Priority)
	require.Equal(t, 255, j.MaxAttempts)
	require.Equal(t, e.clk.Now().Add(2*time.Minute), j.AvailableAt)
	require.Equal(t, Int(7), j.WorkflowID)
	require.Equal(t, Int(2), j.StepIndex)
	require.Equal(t, Int(11), j.DependsOn)
	require.Equal(t, Int(13), j.BatchID)
	require.Equal(t, String("tenant-1"), j.ConcurrencyGroup, "group is trimmed")
	require.Equal(t, Int(65535), j.ConcurrencyLimit)
	require.Equal(t, int64(9), j.CostUnits)
	require.Equal(t, StatusPending, j.Status)
}

func TestInsertJobConcurrencyAndCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		group     string
		limit     int
		wantGroup any // string, or nil for NULL
		wantLimit any // int64, or nil for NULL
	}{
		{"", 5, nil, nil},
		{"   ", 5, nil, nil},
		{"g", 0, nil, nil},
		{"g", -3, nil, nil},
		{"", 0, nil, nil},
		{"g", 1, "g", int64(1)},
		{" g ", 2, "g", int64(2)},
	} {
		t.Run(fmt.Sprintf("group %q limit %d", tc.group, tc.limit), func(t *testing.T) {
			j := e.job(e.dispatch(InsertJob{ConcurrencyGroup: tc.group, ConcurrencyLimit: tc.limit}))
			if tc.wantGroup == nil {
				require.False(t, j.ConcurrencyGroup.Valid, "group must be NULL")
				require.False(t, j.ConcurrencyLimit.Valid, "limit must be NULL")
				return
			}
			require.Equal(t, String(tc.wantGroup.(string)), j.ConcurrencyGroup)
			require.Equal(t, Int(tc.wantLimit.(int64)), j.ConcurrencyLimit)
		})
	}
	for _, tc := range []struct{ in, want int64 }{{-5, 0}, {-1, 0}, {0, 0}, {1, 1}, {7, 7}} {
		t.Run(fmt.Sprintf("cost %d", tc.in), func(t *testing.T) {
			id, _, err := e.s.InsertJob(e.ctx, InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3, CostUnits: int(tc.in)})
			require.NoError(t, err)
			require.Equal(t, tc.want, e.job(id).CostUnits)
		})
	}
}

// TestInsertJobDelayUsesAppClock sets the app clock far from the database's
// NOW(): available_at follows the app clock, created_at the database.
func TestInsertJobDelayUsesAppClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clk.Set(time.Date(2031, 5, 6, 7, 8, 9, 900_000_000, time.UTC))
	for _, tc := range []struct {
		delay time.Duration
		want  string
	}{
		{0, "2031-05-06 07:08:09"},
		{90 * time.Second, "2031-05-06 07:09:39"},
		{1500 * time.Millisecond, "2031-05-06 07:08:11"},
		{24 * time.Hour, "2031-05-07 07:08:09"},
	} {
		j := e.job(e.dispatch(InsertJob{Delay: tc.delay}))
		require.Equal(t, tc.want, DateTime(j.AvailableAt), "delay %s", tc.delay)
		require.WithinDuration(t, time.Now().UTC(), j.CreatedAt, time.Minute)
	}
}

func TestInsertJobUnique(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	payload := []byte(`{"user":42}`)
	unique := func(handler string) (int64, bool) {
		t.Helper()
		id, existing, err := e.s.InsertJob(e.ctx, InsertJob{Queue: "default", Handler: handler, Payload: payload, MaxAttempts: 3, CostUnits: 1, Unique: true})
		require.NoError(t, err)
		return id, existing
	}

	first, existing := unique("send")
	require.False(t, existing)
	require.Equal(t, String(PayloadHash(payload)), e.job(first).PayloadHash)

	again, existing := unique("send")
	require.True(t, existing, "pending duplicate")
	require.Equal(t, first, again)

	// Not unique: inserted regardless, with a NULL hash.
	plain := e.dispatch(InsertJob{Handler: "send", Payload: payload})
	require.NotEqual(t, first, plain)
	require.False(t, e.job(plain).PayloadHash.Valid)

	// The handler is compared separately from the hash.
	other, existing := unique("other")
	require.False(t, existing)
	require.NotEqual(t, first, other)

	e.hold(first, "w", 1)
	again, existing = unique("send")
	require.True(t, existing, "processing duplicate")
	require.Equal(t, first, again)

	n := e.count("SELECT COUNT(*) FROM {jobs}")
	last := first
	for _, st := range []string{"completed", "failed", "buried"} {
		e.exec("UPDATE {jobs} SET status = ? WHERE id = ?", st, last)
		next, existing := unique("send")
		require.False(t, existing, "after %s", st)
		require.NotEqual(t, last, next)
		n++
		require.Equal(t, n, e.count("SELECT COUNT(*) FROM {jobs}"))
		last = next
	}
}

func TestPayloadHash(t *testing.T) {
	t.Parallel()
	// Spec §2.2: verified against the plugin.
	require.Equal(t, "3454868067f105fe0a7bf2a05b9a2e8ef0fd84c7e77ca8d95ba5ed6e58ca8d9d",
		PayloadHash([]byte(`{"url":"http:\/\/x\/y","n":"Zo\u00eb","f":1.5}`)))
	require.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", PayloadHash(nil))
	// Exact bytes: any difference changes the hash.
	require.NotEqual(t, PayloadHash([]byte(`{"a":1}`)), PayloadHash([]byte(`{"a": 1}`)))
	require.Len(t, PayloadHash([]byte(`[]`)), 64)
}

// TestPayloadHashPluginFixture checks the hash the plugin stored for a
// unique dispatch, and that our insert stores the same one.
func TestPayloadHashPluginFixture(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/queuety-plugin/job_payload_encoding.json")
	require.NoError(t, err)
	var doc struct {
		Snapshots []struct {
			Jobs []struct {
				Handler     string  `json:"handler"`
				Payload     string  `json:"payload"`
				PayloadHash *string `json:"payload_hash"`
			} `json:"jobs"`
		} `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Snapshots)
	e := newEnv(t)
	checked := 0
	for _, j := range doc.Snapshots[0].Jobs {
		if j.PayloadHash == nil {
			continue
		}
		require.Equal(t, *j.PayloadHash, PayloadHash([]byte(j.Payload)))
		id, _, err := e.s.InsertJob(e.ctx, InsertJob{Queue: "default", Handler: j.Handler, Payload: []byte(j.Payload), MaxAttempts: 3, CostUnits: 1, Unique: true})
		require.NoError(t, err)
		require.Equal(t, String(*j.PayloadHash), e.job(id).PayloadHash)
		require.Equal(t, j.Payload, e.job(id).Payload)
		checked++
	}
	require.Positive(t, checked)
}

func TestInsertJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n, err := e.s.InsertJobs(e.ctx, nil)
	require.NoError(t, err)
	require.Zero(t, n)

	jobs := make([]InsertJob, 2500) // three statements of at most 1000 rows
	for i := range jobs {
		jobs[i] = InsertJob{
			Queue: fmt.Sprintf("q%d", i%3), Handler: fmt.Sprintf("h%d", i), Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)),
			Priority: i % 4, MaxAttempts: 1 + i%5, Delay: time.Duration(i%2) * time.Hour,
			// Not written by Queue::batch:
			Unique: true, DependsOn: Int(1), BatchID: Int(2), ConcurrencyGroup: "g", ConcurrencyLimit: 2, CostUnits: 9,
		}
	}
	n, err = e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	require.Equal(t, 2500, n)
	require.Equal(t, 2500, e.count("SELECT COUNT(*) FROM {jobs}"))

	var rows []JobRow
	require.NoError(t, e.s.unsafe.SelectContext(e.ctx, &rows, render("SELECT * FROM {jobs} ORDER BY id", e.tables)))
	require.Len(t, rows, 2500)
	for i, j := range rows {
		p := jobs[i]
		require.Equal(t, p.Queue, j.Queue)
		require.Equal(t, p.Handler, j.Handler, "insertion order kept")
		require.Equal(t, string(p.Payload), j.Payload)
		require.Equal(t, p.Priority, j.Priority)
		require.Equal(t, p.MaxAttempts, j.MaxAttempts)
		require.Equal(t, e.clk.Now().Add(p.Delay), j.AvailableAt)
		require.Equal(t, StatusPending, j.Status)
		require.False(t, j.PayloadHash.Valid)
		require.False(t, j.DependsOn.Valid)
		require.False(t, j.BatchID.Valid)
		require.False(t, j.ConcurrencyGroup.Valid)
		require.Equal(t, int64(1), j.CostUnits, "column default")
		if i > 0 {
			require.Equal(t, rows[i-1].ID+1, j.ID, "consecutive ids, as Queue::batch assumes")
		}
	}
}
