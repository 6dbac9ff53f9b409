package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/internal/storetest"
)

// fuzzRoutes are every route of the API, {p} standing for the fuzzed path
// parameter.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/api/worker/register"},
	{"POST", "/api/worker/heartbeat"},
	{"DELETE", "/api/worker/registrations/{p}"},
	{"POST", "/api/worker/sessions"},
	{"POST", "/api/worker/sessions/{p}/heartbeat"},
	{"DELETE", "/api/worker/sessions/{p}"},
	{"POST", "/api/worker/activity-tasks/poll"},
	{"POST", "/api/worker/activity-tasks/{p}/heartbeat"},
	{"POST", "/api/worker/activity-tasks/{p}/complete"},
	{"POST", "/api/worker/activity-tasks/{p}/fail"},
	{"GET", "/api/worker-sessions"},
	{"GET", "/api/worker-sessions/{p}"},
	{"GET", "/api/system/operator-metrics"},
	{"GET", "/api/cluster/info"},
}

type cancelKey struct{}

// fuzzTasks answers every poll with nothing and ends the long poll at once
// (it cancels the request's context, which longPoll reads as the worker
// hanging up), so a fuzzed poll_timeout_seconds does not stall the fuzzer.
type fuzzTasks struct{ *fakeTasks }

func (f fuzzTasks) Poll(ctx context.Context, p TaskPoll) (*Task, error) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
	return nil, nil
}

// FuzzHandlers sends random bodies (and path parameters) to every route of
// the HTTP API, through the real handler: whatever the bytes, the answer is
// a JSON response below 500 (or net/http's redirect of an unclean path) (a refusal is 4xx; a panic or an unhandled
// storage error would be 500).
//
//	go test ./internal/httpapi -run '^$' -fuzz '^FuzzHandlers$' -fuzztime 60s
func FuzzHandlers(f *testing.F) {
	clk := clock.NewFake(t0)
	st, _ := storetest.New(f, clk, 8)
	reg := sessions.New(st, sessions.Config{Clock: clk, StaleAfter: 60 * time.Second})
	srv, err := New(Config{
		WorkerToken: workerToken, OperatorToken: operatorToken,
		Registry: reg, Tasks: fuzzTasks{&fakeTasks{}}, ServerID: "test", Version: "test",
		PollInterval: time.Millisecond,
	})
	require.NoError(f, err)
	e := &env{ctx: context.Background(), st: st, clk: clk, reg: reg, srv: srv}
	// A registered worker and a session, so the seeds reach past the
	// "unknown worker" answers.
	for _, q := range []req{
		{path: "/api/worker/register", body: map[string]any{"worker_id": "w1", "task_queue": "gpu-activities", "capabilities": []string{"gpu:nvidia-l4"}}},
		{path: "/api/worker/sessions", body: gpuCreate("w1", "held")},
	} {
		r, err := e.send(q)
		require.NoError(f, err)
		require.Less(f, r.status, 300, "%s", r.raw)
	}

	seeds := []string{
		``, `{}`, `[]`, `[1,2]`, `null`, `"x"`, `{"worker_id":`, "\xff\xfe",
		`{"worker_id":"w1","task_queue":"gpu-activities","runtime":"python","capabilities":["gpu:nvidia-l4"],"heartbeat_interval_seconds":30,"max_concurrent_worker_sessions":2,"task_slots":{"session_available":1}}`,
		`{"worker_id":"w1","task_queues":["a","b"],"sdk_version":"1.0"}`,
		`{"worker_id":"w1","session_id":"s1","queue":"gpu-activities","requirements":["gpu:nvidia-l4"],"lease_seconds":120,"ttl_seconds":600,"max_concurrent_activities":1,"create_if_missing":true}`,
		`{"worker_id":"w1","session_id":"s","lease_seconds":5e9}`,
		`{"worker_id":"w1","lease_seconds":-1,"ttl_seconds":1.5}`,
		`{"worker_id":"w1","poll_timeout_seconds":30,"task_queue":"gpu-activities"}`,
		`{"worker_id":"w1","activity_attempt_id":"7.1","lease_owner":"w1","result":{"a":[1,{"b":null}]},"progress":{"pct":50}}`,
		`{"worker_id":"w1","activity_attempt_id":"7.1","lease_owner":"w1","failure":{"message":"x","type":"E","non_retryable":true,"details":[1]}}`,
		`{"worker_id":"w1","reason":"done","task_slots":{"gpu_available":1}}`,
		`{"worker_id":"` + strings.Repeat("a", 300) + `"}`,
	}
	params := []string{"w1", "held", "7", "7.1", "", "..", "a b", "%zz", strings.Repeat("s", 300)}
	for i, s := range seeds {
		f.Add(uint8(i), params[i%len(params)], []byte(s))
	}
	f.Fuzz(func(t *testing.T, route uint8, param string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.ReplaceAll(rt.path, "{p}", url.PathEscape(param))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx = context.WithValue(ctx, cancelKey{}, context.CancelFunc(cancel))
		r, err := e.send(req{method: rt.method, path: path, body: body, ctx: ctx})
		if r.status >= 300 && r.status < 400 {
			// net/http's mux redirects unclean paths ("/a/../b") before
			// any handler of ours runs.
			require.NotEmpty(t, r.header.Get("Location"), "%s %s: %d without a Location", rt.method, path, r.status)
			return
		}
		require.NoError(t, err, "%s %s %q: status %d", rt.method, path, body, r.status)
		require.Less(t, r.status, http.StatusInternalServerError, "%s %s %q: %s", rt.method, path, body, r.raw)
		require.GreaterOrEqual(t, r.status, 200)
		require.True(t, json.Valid(r.raw))
	})
}

// FuzzParseVersion: the worker protocol header has one spelling per
// version: what parseVersion accepts prints back to exactly the header.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.13", "1.0", "0.0", "2.0", "1.x", "1.013", "01.1", "1.", ".1", "1.1.1", "", "999999.999999", "1000000.1", "+1.1", "1.-1", "١.١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseVersion(s)
		if !ok {
			require.Equal(t, version{}, v)
			return
		}
		require.Equal(t, s, v.String())
		require.True(t, v.major >= 0 && v.minor >= 0)
		require.False(t, v.less(v))
	})
}
