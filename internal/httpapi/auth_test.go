package httpapi

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Bearer scheme is case-insensitive (RFC 7235); spaces around the
// token are not part of it.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, auth := range []string{"Bearer " + workerToken, "bearer " + workerToken, "BEARER " + workerToken, "BeArEr  " + workerToken + "\t"} {
		r := e.do(req{path: "/api/worker/register", auth: auth, body: map[string]any{"worker_id": fmt.Sprint("w", i), "task_queue": "q"}})
		require.Equal(t, http.StatusCreated, r.status, "%q: %s", auth, r.raw)
	}
}

// Tokens shorter than MinTokenBytes, or of whitespace only, are refused
// when the server is built; surrounding whitespace is trimmed as it is
// from the header.
func TestTokenStrength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := "k0123456789abcdef"[:MinTokenBytes]
	for _, tc := range []struct{ worker, operator, want string }{
		{"w", long, "worker token is 1 bytes"},
		{long, "               o", "operator token is 1 bytes"},
		{long, "                    ", "an operator token is required"},
	} {
		_, err := New(Config{Registry: e.reg, WorkerToken: tc.worker, OperatorToken: tc.operator})
		require.ErrorContains(t, err, tc.want, "%q/%q", tc.worker, tc.operator)
	}
	srv, err := New(Config{Registry: e.reg, WorkerToken: " " + long + "\n", OperatorToken: long + "-operator"})
	require.NoError(t, err)
	require.Equal(t, long, srv.cfg.WorkerToken, "a token read from a file with its newline still matches")

	require.ErrorContains(t, CheckToken("--worker-token", "   "), "--worker-token is only whitespace")
	require.ErrorContains(t, CheckToken("--worker-token", "abc"), "--worker-token is 3 bytes: use a random token of at least 16 bytes")
	require.NoError(t, CheckToken("--worker-token", long))
}

// N17: a token long enough but typed, not generated (fewer than
// MinTokenDistinct different characters), is refused at start with the
// rule; 32 hex digits pass.
func TestWeakTokenRefused(t *testing.T) {
	t.Parallel()
	for _, weak := range []string{"aaaaaaaaaaaaaaaa", "abababababababababababab", "0000000011111111", "         aaaaaaaaaaaaaaaaa  "} {
		err := CheckToken("--operator-token", weak)
		require.ErrorContains(t, err, "guessable token is refused", "%q", weak)
		require.NotContains(t, err.Error(), strings.TrimSpace(weak), "the message does not repeat the token")
	}
	require.NoError(t, CheckToken("--operator-token", "3f9a0c1e7b2d4a6f8e0c2b4d6f8a1c3e"))
	e := newEnv(t)
	_, err := New(Config{Registry: e.reg, WorkerToken: workerToken, OperatorToken: strings.Repeat("a", 16)})
	require.ErrorContains(t, err, "operator token holds only 1 different characters")
}

// Plain HTTP on an address other hosts can reach is logged as a warning.
func TestPlainHTTPWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		var logs bytes.Buffer
		srv, err := New(Config{Registry: e.reg, WorkerToken: workerToken, OperatorToken: operatorToken, Listen: tc.listen,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		require.NoError(t, srv.Start(e.ctx))
		require.NoError(t, srv.Stop(e.ctx))
		require.Equal(t, tc.warn, strings.Contains(logs.String(), "level=WARN msg=\"serving plain HTTP on a non-loopback address"), "%s: %s", tc.listen, logs.String())
	}
}

// A server started with the operator token alone serves the operator
// plane and refuses the worker plane with the reason (it used to refuse to
// start); with a dashboard mounted, "/" sends a browser to it.
func TestWorkerPlaneOffWithoutWorkerToken(t *testing.T) {
	t.Parallel()
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("dashboard")) })
	e := newEnv(t, func(c *Config) { c.WorkerToken, c.UI = "", ui })
	r := e.do(req{path: "/api/worker/register", token: operatorToken, body: map[string]any{"worker_id": "w1", "task_queue": "q"}})
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.raw)
	require.Contains(t, string(r.raw), "worker plane is off")
	r = e.do(req{path: "/api/worker/register", token: "some-other-token-0123", body: map[string]any{"worker_id": "w1", "task_queue": "q"}})
	require.Equal(t, http.StatusForbidden, r.status, "no token opens the worker plane")
	r = e.do(req{method: http.MethodGet, path: "/api/worker-sessions"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	rec := httptest.NewRecorder()
	e.srv.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusFound, rec.Code, rec.Body.String())
	require.Equal(t, "/ui/", rec.Header().Get("Location"))
}
