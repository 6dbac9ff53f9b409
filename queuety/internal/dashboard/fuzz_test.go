package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// fuzzTargets are the dashboard's query parameters and forms; the fuzzed
// value v goes where the target says.
var fuzzTargets = []struct {
	method string
	path   func(v string) string
	form   func(v string) url.Values
}{
	{"GET", func(v string) string { return "/ui/jobs?" + url.Values{"page": {v}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/jobs?" + url.Values{"queue": {v}, "status": {"pending"}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/jobs?" + url.Values{"handler": {v}, "since": {v}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/jobs?" + url.Values{"status": {v}, "error": {v}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/workflows?" + url.Values{"page": {v}, "name": {v}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/workflows?" + url.Values{"status": {v}, "since": {v}}.Encode() }, nil},
	{"GET", func(v string) string { return "/ui/jobs/" + url.PathEscape(v) }, nil},
	{"GET", func(v string) string { return "/ui/workflows/" + url.PathEscape(v) }, nil},
	{"GET", func(v string) string { return "/ui/login?" + url.Values{"next": {v}}.Encode() }, nil},
	{"POST", func(string) string { return "/ui/queues/pause" }, func(v string) url.Values { return url.Values{"queue": {v}} }},
	{"POST", func(v string) string { return "/ui/queues/" + url.PathEscape(v) + "/pause" }, func(string) url.Values { return url.Values{} }},
	{"POST", func(string) string { return "/ui/workflows/1/approve" }, func(v string) url.Values { return url.Values{"signal": {v}, "back": {v}} }},
	{"POST", func(string) string { return "/ui/buried/retry" }, func(v string) url.Values { return url.Values{"handler": {v}, "error": {v}} }},
	{"POST", func(string) string { return "/ui/jobs/bulk" }, func(v string) url.Values {
		return url.Values{"action": {"retry"}, "scope": {v}, "id": {v}, "queue": {v}}
	}},
	{"POST", func(string) string { return "/ui/workflows/bulk" }, func(v string) url.Values {
		return url.Values{"action": {"pause"}, "scope": {"selected"}, "id": {v}}
	}},
}

// FuzzDashboardInputs sends any value to every query parameter and form
// field of the dashboard (as the operator's bearer token, so no form
// token is needed): the answer is never a 5xx, never shows SQL, and a
// queue pause that succeeds paused exactly the queue named, nothing else.
//
//	go test ./queuety/internal/dashboard -run '^$' -fuzz '^FuzzDashboardInputs$' -fuzztime 60s
func FuzzDashboardInputs(f *testing.F) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{
		DSN: testdb.New(f), PollInterval: 10 * time.Millisecond, RescueSchedule: "off", Workflows: true,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(f, err)
	f.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(ctx)
	require.NoError(f, err)
	_, err = c.Dispatch(ctx, "report.build", nil, queuety.OnQueue("reports"))
	require.NoError(f, err)
	d, err := workflow.New("editorial").Then("Draft").WaitForApproval().Build(phpjson.NewObject())
	require.NoError(f, err)
	_, _, err = c.DispatchWorkflow(ctx, d)
	require.NoError(f, err)
	ui, err := dashboard.New(dashboard.Config{Client: c, OperatorToken: operatorToken})
	require.NoError(f, err)

	for i, v := range []string{
		"1", "9223372036854775807", "-5", "0", "2001", "abc", "", "1h", "-1h", "9999999999h",
		"../workflows/1/approve?", "emails/high", "a%2Fb", "..", "%2e%2e", `"><img src=x onerror=alert(1)>`,
		"nul\x00q", "esc\x1b[2J", strings.Repeat("q", 65), strings.Repeat("%", 3000), "\xff\xfe", "//evil.example", "/ui/../\t/evil",
		"all", "18446744073709551616",
	} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, target uint8, v string) {
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		path := tg.path(v)
		var body io.Reader
		if tg.form != nil {
			body = strings.NewReader(tg.form(v).Encode())
		}
		r := httptest.NewRequestWithContext(ctx, tg.method, path, body)
		if tg.form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		r.Header.Set("Authorization", "Bearer "+operatorToken)
		w := httptest.NewRecorder()
		before, err := clientstore.Of(c).PausedQueues(ctx)
		require.NoError(t, err)
		ui.ServeHTTP(w, r)
		out := w.Body.String()
		require.Less(t, w.Code, 500, "%s %s %q: %s", tg.method, path, v, out)
		require.NotContains(t, out, "SQL syntax")
		require.NotContains(t, out, "Error 1", "no server error text")
		after, err := clientstore.Of(c).PausedQueues(ctx)
		require.NoError(t, err)
		if strings.HasPrefix(path, "/ui/queues/") && w.Code == http.StatusSeeOther {
			require.Empty(t, before)
			require.Equal(t, []string{v}, after, "%s: paused exactly %q", path, v)
			require.NoError(t, c.Resume(ctx, v))
			return
		}
		require.True(t, slices.Equal(before, after), "%s %s: no other action paused a queue", tg.method, path)
		if strings.HasPrefix(path, "/ui/queues/") && w.Code == http.StatusBadRequest {
			require.ErrorIs(t, store.CheckName(store.QueueName, v), store.ErrInvalidName, "%q refused: only a bad name is", v)
		}
	})
}
