package httpapi

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout bounds one readiness check.
const readyTimeout = 3 * time.Second

// HealthHandler is GET /healthz: the process answers, so it is alive.
// No token, and nothing but the word "ok".
func HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
}

// ReadyHandler is GET /readyz: 200 "ready" when ready returns nil (or is
// nil), else 503 "not ready". The cause is not told to the caller, who
// holds no token.
func ReadyHandler(ready func(ctx context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				plain(w, http.StatusServiceUnavailable, "not ready")
				return
			}
		}
		plain(w, http.StatusOK, "ready")
	})
}

func plain(w http.ResponseWriter, status int, word string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(word + "\n"))
}
