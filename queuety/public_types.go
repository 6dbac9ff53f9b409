package queuety

import (
	"context"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
)

// The API hands out a few types implemented in internal packages; these
// aliases give them public names, so a user's module can declare them
// (a user cannot import internal/). internal/layout's test fails on an
// exported signature that names an internal type without one.
type (
	// Clock is the application clock (Config.Clock): every time the
	// daemon computes in Go is read from it, so tests can move it.
	Clock = clock.Clock
	// Ticker is what Clock.NewTicker returns: a time.Ticker on the
	// clock's time, so a test's fake clock drives the worker's loops.
	Ticker = clock.Ticker

	// SessionSnapshot is one worker session as lifecycle results and
	// operators see it (durable-workflow's workerSessionSnapshot).
	SessionSnapshot = sessions.Snapshot
	// SessionHolder is the registration of a session's lease owner as the
	// snapshot shows it.
	SessionHolder = sessions.Holder
	// SessionResult is the answer to a session lifecycle operation (a
	// renewal on heartbeat, a close): admitted or refused, and why.
	SessionResult = sessions.Result
	// WorkerRegistration is what a worker registers (table workers).
	WorkerRegistration = sessions.Registration
	// SessionWorker is a stored registration as operators see it.
	SessionWorker = sessions.Worker
)

// Workers lists the registered workers of namespace ("" = default), with
// their staleness, as `queuety worker list` shows them.
func (c *Client) Workers(ctx context.Context, namespace string) ([]SessionWorker, error) {
	return c.sessions.Workers(ctx, namespace)
}
