package cli

import (
	"context"
	"fmt"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
)

// Defaults of the HTTP API flags.
const (
	DefaultListen    = "127.0.0.1:8080"
	httpShutdownWait = 10 * time.Second
)

// httpAPIFlags configure the HTTP API; `serve` and `work --http` share
// them. New flag values each call: urfave/cli flags hold parse state.
func httpAPIFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "worker-token", EnvVars: []string{"QUEUETY_WORKER_TOKEN"}, Usage: "bearer token of the worker plane (prefer the environment variable: flags show in ps)"},
		&cli.StringFlag{Name: "operator-token", EnvVars: []string{"QUEUETY_OPERATOR_TOKEN"}, Usage: "bearer token of the operator plane (worker sessions, metrics); must differ from the worker token"},
		&cli.BoolFlag{Name: "insecure-no-auth", Usage: "serve without tokens; only allowed on a loopback address"},
		&cli.Int64Flag{Name: "max-body-bytes", Value: httpapi.DefaultMaxBodyBytes, EnvVars: []string{"QUEUETY_HTTP_MAX_BODY_BYTES"}, Usage: "largest request body accepted (larger: 413 payload_too_large)"},
		&cli.DurationFlag{Name: "poll-timeout", Value: httpapi.DefaultPollTimeout, EnvVars: []string{"QUEUETY_HTTP_POLL_TIMEOUT"}, Usage: "how long an activity-task poll waits for work when the worker does not say (at most 30s)"},
	}, dashboardFlags()...)
}

// checkHTTPAuth validates the token flags before anything connects, so a
// misconfigured server fails at once with the flag to fix.
func checkHTTPAuth(c *cli.Context, listen string) error {
	worker, operator := strings.TrimSpace(c.String("worker-token")), strings.TrimSpace(c.String("operator-token"))
	if c.Bool("insecure-no-auth") {
		if !httpapi.Loopback(listen) {
			return usagef("--insecure-no-auth is only allowed on a loopback address (127.0.0.1, [::1], localhost), not %q: set QUEUETY_WORKER_TOKEN and QUEUETY_OPERATOR_TOKEN instead", listen)
		}
		if worker != "" || operator != "" {
			return usagef("--insecure-no-auth with a token set: drop one or the other")
		}
		return nil
	}
	// Whitespace-only tokens could never match (the header's is trimmed):
	// say so rather than "not set".
	if err := checkTokens(c, true); err != nil {
		return err
	}
	switch {
	// The worker token is optional: without it the worker plane (external
	// workers, activity tasks) is off, which the start-up log says.
	case worker == "" && operator == "":
		return usagef("the HTTP API needs the operator token: set QUEUETY_OPERATOR_TOKEN (or --operator-token), and QUEUETY_WORKER_TOKEN too if external workers connect; for a local experiment only, --insecure-no-auth on a loopback address")
	case operator == "":
		return usagef("--operator-token (QUEUETY_OPERATOR_TOKEN) is not set; the operator plane needs its own token")
	case worker == operator:
		return usagef("--worker-token and --operator-token are the same; use two different tokens so a worker cannot read the operator plane")
	}
	if err := checkTokens(c, false); err != nil {
		return err
	}
	return nil
}

// checkTokens applies httpapi.CheckToken to both token flags, naming the
// flag and its variable; blankOnly checks only for whitespace-only ones.
func checkTokens(c *cli.Context, blankOnly bool) error {
	for _, t := range []struct{ name, raw string }{
		{"--worker-token (QUEUETY_WORKER_TOKEN)", c.String("worker-token")},
		{"--operator-token (QUEUETY_OPERATOR_TOKEN)", c.String("operator-token")},
	} {
		if t.raw == "" || blankOnly && strings.TrimSpace(t.raw) != "" {
			continue // unset: the worker token may be (the operator's was checked)
		}
		if err := httpapi.CheckToken(t.name, t.raw); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// newHTTPServer builds the HTTP API over client from the httpAPIFlags,
// to listen on listen: the session registry of the client, its job
// runtime for the activity-task routes, and its local-activity metrics.
// Call checkHTTPAuth first.
func newHTTPServer(c *cli.Context, client *queuety.Client, listen string, obs *observability, ui http.Handler) (*httpapi.Server, error) {
	if c.Int64("max-body-bytes") < 1024 {
		return nil, usagef("--max-body-bytes %d: must be at least 1024", c.Int64("max-body-bytes"))
	}
	if d := c.Duration("poll-timeout"); d < time.Second || d > 30*time.Second {
		return nil, usagef("--poll-timeout %s: use 1s to 30s", d)
	}
	srv, err := httpapi.New(httpapi.Config{
		Listen:         listen,
		WorkerToken:    c.String("worker-token"),
		OperatorToken:  c.String("operator-token"),
		InsecureNoAuth: c.Bool("insecure-no-auth"),
		MaxBodyBytes:   c.Int64("max-body-bytes"),
		PollTimeout:    c.Duration("poll-timeout"),
		Registry:       sessionRegistry(client),
		Tasks:          httpTasks{client.Tasks()},
		Metrics:        clientMetrics{client},
		Prometheus:     obs.m.Handler(),
		Ready:          obs.ready.check,
		UI:             ui,
		Logger:         client.Config().Logger,
	})
	if err != nil {
		return nil, usageError{err}
	}
	if !c.Bool("insecure-no-auth") && strings.TrimSpace(c.String("worker-token")) == "" {
		client.Config().Logger.Info("the worker plane is off: no worker token; set QUEUETY_WORKER_TOKEN if external workers connect")
	}
	return srv, nil
}

// clientMetrics feeds GET /api/system/operator-metrics.
type clientMetrics struct{ c *queuety.Client }

func (m clientMetrics) OperatorMetrics(ctx context.Context, _ string) (map[string]any, error) {
	a, err := m.c.ActivityMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"activities": a}, nil
}

func (a *app) serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the HTTP API: external workers, worker sessions, operator views",
		Description: `Serves the worker plane (register, heartbeat, worker sessions, activity tasks
for external workers in any language), the operator plane (worker sessions and
their per-state counts, operator metrics) and GET /api/cluster/info, which
publishes the worker-session and local-activity contracts.

   QUEUETY_WORKER_TOKEN=... QUEUETY_OPERATOR_TOKEN=... queuety serve --listen 127.0.0.1:8080

Without QUEUETY_WORKER_TOKEN the worker plane is off (the dashboard and the
operator plane need only the operator token).

Workers send Authorization: Bearer <worker token> and
X-Durable-Workflow-Protocol-Version: 1.13; operators send the operator token
and X-Durable-Workflow-Control-Plane-Version: 2. Run queuety migrate first.
GET /metrics (operator token) is Prometheus text; GET /healthz and GET /readyz
take no token. --metrics-listen serves those three without a token on another
address (a bare port binds 127.0.0.1).
The web dashboard is at /ui/ (log in with the operator token; --ui-read-only
refuses every action, --no-ui turns it off).
With --network FILE or --sites GLOB|FILE, serve shows the dashboard of every
site (an all-sites overview at /ui/, each site's pages under /ui/sites/<key>/)
and nothing else: no worker plane (docs/sites.md).
SIGTERM or SIGINT: waiting polls answer empty, requests in flight finish, exit 0.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: DefaultListen, EnvVars: []string{"QUEUETY_LISTEN"}, Usage: "address to listen on (port 0: any free port)"},
			&cli.DurationFlag{Name: "worker-stale-after", Value: queuety.DefaultWorkerStaleAfter, EnvVars: []string{"QUEUETY_WORKER_STALE_AFTER"}, Usage: "a worker registration not heartbeated this long is stale; its sessions become orphaned"},
			metricsListenFlag(), startupWaitFlag(),
		}, append(httpAPIFlags(), serveSitesFlags()...)...),
		Action: func(c *cli.Context) error {
			listen := c.String("listen")
			if err := checkHTTPAuth(c, listen); err != nil {
				return err
			}
			if many, err := sitesMode(c); err != nil || many {
				if err != nil {
					return err
				}
				return a.serveSites(c)
			}
			cfg, err := baseConfig(c)
			if err != nil {
				return err
			}
			if err := staleAfterConfig(c, &cfg); err != nil {
				return err
			}
			wait, err := startupWait(c)
			if err != nil {
				return err
			}
			obs, err := newObservability(c, &cfg, false)
			if err != nil {
				return err
			}
			// Up before the database is: /readyz says "not ready" meanwhile.
			if err := obs.startListener(c.Context, c.App.ErrWriter, "serve"); err != nil {
				return err
			}
			defer obs.stopListener()
			// As work does: an unmigrated database would answer 500 to
			// every worker call, so openWaiting refuses it with the fix.
			client, err := openWaiting(c, cfg, wait)
			if err != nil {
				return err
			}
			defer client.Close()
			obs.attach(client, nil)
			ui, err := newDashboard(c, client, a.reg, nil, nil)
			if err != nil {
				return err
			}
			srv, err := newHTTPServer(c, client, listen, obs, ui)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := srv.Start(ctx); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "queuety serve: listening on http://%s\n", srv.Addr())
			stopNotify := notifyReady(ctx, client.Config().Logger, nil)
			<-ctx.Done()
			stopNotify()
			sctx, cancel := context.WithTimeout(context.Background(), httpShutdownWait)
			defer cancel()
			return srv.Stop(sctx)
		},
	}
}
