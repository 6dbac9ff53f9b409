package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// StartupRetry is how OpenRetrying rides out a database that is down, or
// that refuses or cuts the connection, when a daemon starts: under systemd
// an exit at the first refusal is a restart loop, under cron a missed run.
// A refused login, a missing database or table, or a server we cannot use
// still fails at once: waiting would not change them.
type StartupRetry struct {
	// For is how long to keep trying; 0 is one attempt.
	For time.Duration
	// First and Max bound the pause between attempts, which doubles from
	// First up to Max (defaults 250 ms and 5 s).
	First, Max time.Duration
	// Logger logs each failed attempt (default: the Config's).
	Logger *slog.Logger
}

// DefaultStartupWait is how long `work` and `serve` wait for the database
// at start unless told otherwise.
const DefaultStartupWait = 5 * time.Minute

// ErrStartupGaveUp wraps the last error when the database stayed
// unreachable for all of StartupRetry.For.
var ErrStartupGaveUp = errors.New("the database stayed unreachable")

// OpenRetrying is Open, then check (when set: the start-up checks that
// need the connection, such as CheckSchema), retried with backoff while
// they fail because the database cannot be reached, for at most r.For or
// until ctx ends. Each failed attempt is logged with its reason and the
// pause before the next.
func OpenRetrying(ctx context.Context, cfg Config, r StartupRetry, check func(context.Context, *Client) error) (*Client, error) {
	log := cmpLogger(r.Logger, cfg.Logger)
	pause := r.First
	if pause <= 0 {
		pause = 250 * time.Millisecond
	}
	maxPause := r.Max
	if maxPause <= 0 {
		maxPause = 5 * time.Second
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		c, err := openChecked(ctx, cfg, check)
		if err == nil {
			if attempt > 1 {
				log.Info("database reachable; starting", "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond))
			}
			return c, nil
		}
		if !store.Unreachable(err) || ctx.Err() != nil {
			return nil, err
		}
		left := r.For - time.Since(start)
		if left <= 0 {
			if r.For <= 0 {
				return nil, err
			}
			return nil, fmt.Errorf("%w for %s (%d attempts): %w", ErrStartupGaveUp, r.For, attempt, err)
		}
		wait := min(pause, left)
		log.Warn("database unreachable at start; retrying", "attempt", attempt, "in", wait, "gives_up_in", left.Round(time.Second), "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped while waiting for the database: %w", err)
		case <-time.After(wait):
		}
		pause = min(2*pause, maxPause)
	}
}

func openChecked(ctx context.Context, cfg Config, check func(context.Context, *Client) error) (*Client, error) {
	c, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(ctx, c); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

func cmpLogger(ls ...*slog.Logger) *slog.Logger {
	for _, l := range ls {
		if l != nil {
			return l
		}
	}
	return slog.New(slog.DiscardHandler)
}
