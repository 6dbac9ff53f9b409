package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// raw sends a request to the server and returns the status and body, for
// the routes that do not answer JSON.
func (e *env) raw(path, token string) (int, string) {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// GET /metrics is on the operator plane: the operator token alone (no
// control-plane header, as a Prometheus scrape sends none); no token is
// 401, the worker token 403.
func TestMetricsRouteNeedsOperatorToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) {
		c.Prometheus = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("queuety_up 1\n")) })
	})
	status, body := e.raw("/metrics", "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	status, body = e.raw("/metrics", workerToken)
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, ReasonForbidden)
	status, body = e.raw("/metrics", operatorToken)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "queuety_up 1\n", body)

	// Without a Prometheus handler the route does not exist.
	e2 := newEnv(t)
	status, _ = e2.raw("/metrics", operatorToken)
	require.Equal(t, http.StatusNotFound, status)
}

// /healthz and /readyz take no token and answer a status word only;
// /readyz follows Config.Ready.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.Ready = func(ctx context.Context) error {
			if down.Load() {
				return errors.New("database unreachable: secret detail")
			}
			return nil
		}
	})
	status, body := e.raw("/healthz", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", strings.TrimSpace(body))
	status, body = e.raw("/readyz", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ready", strings.TrimSpace(body))

	down.Store(true)
	status, body = e.raw("/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not ready", strings.TrimSpace(body), "no detail for a caller without a token")
	status, _ = e.raw("/healthz", "")
	require.Equal(t, http.StatusOK, status, "alive while not ready")
}
