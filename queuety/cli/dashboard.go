package cli

import (
	"net/http"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// dashboardFlags configure the web dashboard at /ui/ (part of the HTTP
// API's flags: serve and work --http).
func dashboardFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-ui", EnvVars: []string{"QUEUETY_NO_UI"}, Usage: "do not serve the web dashboard at /ui/"},
		&cli.BoolFlag{Name: "ui-read-only", EnvVars: []string{"QUEUETY_UI_READ_ONLY"}, Usage: "the web dashboard shows everything and refuses every action"},
	}
}

// newDashboard builds the dashboard for the HTTP API (nil with --no-ui):
// login with the operator token, actions through client and reg, the
// PHP pool's processes when pool is set, and the webhook deliveries of w
// when this process runs a worker that sends them (work --http; serve
// runs none).
func newDashboard(c *cli.Context, client *queuety.Client, reg *queuety.Registry, pool *phppool.Pool, w *queuety.Worker) (http.Handler, error) {
	if c.Bool("no-ui") {
		return nil, nil
	}
	cfg := dashboard.Config{
		Client:         client,
		Registry:       reg,
		OperatorToken:  c.String("operator-token"),
		InsecureNoAuth: c.Bool("insecure-no-auth"),
		ReadOnly:       c.Bool("ui-read-only"),
		Logger:         client.Config().Logger,
	}
	if pool != nil {
		cfg.PoolStats = pool.Stats
	}
	if w != nil && !client.Config().Webhooks.Disabled {
		// With --no-webhooks the page says this process sends none.
		cfg.WebhookDeliveries = w.WebhookDeliveries
	}
	d, err := dashboard.New(cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return d, nil
}
