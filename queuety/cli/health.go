package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

func (a *app) healthCommand() *cli.Command {
	return &cli.Command{
		Name:  "health",
		Usage: "exit 0 when ready: the database answers and is migrated (or, with --url, a running daemon's /readyz says so)",
		Description: `For scripts, container health checks and deploys. Without --url it connects
to the database and checks the schema itself; with --url it asks a running
queuety work --http, serve or --metrics-listen listener:

   queuety health && echo ready
   queuety health --url http://127.0.0.1:9090

Prints "ready" and exits 0, or prints "not ready: <why>" and exits 1. With
--json it prints {"ready": true} or {"ready": false, "error": "<why>"}.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"QUEUETY_HEALTH_URL"}, Usage: "base URL of a running daemon (its /readyz is asked), e.g. http://127.0.0.1:9090"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, EnvVars: []string{"QUEUETY_HEALTH_TIMEOUT"}, Usage: "give up after this long"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			var err error
			if u := c.String("url"); u != "" {
				err = askReadyz(ctx, u)
			} else {
				err = checkDatabase(ctx, c)
			}
			if c.Bool("json") {
				out := struct {
					Ready bool   `json:"ready"`
					Error string `json:"error,omitempty"`
				}{Ready: err == nil}
				if err != nil {
					out.Error = err.Error()
				}
				if jerr := printJSON(c, out); jerr != nil {
					return jerr
				}
			}
			if err != nil {
				return fmt.Errorf("not ready: %w", err)
			}
			if !c.Bool("json") {
				fmt.Fprintln(c.App.Writer, "ready")
			}
			return nil
		},
	}
}

// checkDatabase connects and checks the schema, as /readyz does.
func checkDatabase(ctx context.Context, c *cli.Context) error {
	client, err := connect(c)
	if err != nil {
		return err
	}
	defer client.Close()
	return (&readiness{st: clientstore.Of(client)}).check(ctx)
}

// askReadyz GETs base's /readyz.
func askReadyz(ctx context.Context, base string) error {
	u := strings.TrimSuffix(base, "/")
	if !strings.HasSuffix(u, "/readyz") {
		u += "/readyz"
	}
	rq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return usagef("--url %q: %v", base, err)
	}
	res, err := http.DefaultClient.Do(rq)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 256))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d %s", u, res.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}
