package cli

import (
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

// sessionRegistry is the worker-session registry over client's tables, for
// the HTTP worker plane and the session commands. It is built as the
// client builds its own, from the same configuration; a registry keeps no
// state (every decision is made on rows locked in MariaDB), so the two
// agree on everything.
func sessionRegistry(client *queuety.Client) *sessions.Registry {
	cfg := client.Config()
	return sessions.New(clientstore.Of(client), sessions.Config{StaleAfter: cfg.WorkerStaleAfter, Logger: cfg.Logger, Clock: cfg.Clock})
}
