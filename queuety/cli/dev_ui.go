package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	"github.com/queuety-go/queuety/workflow"
)

// checkDevListen: dev's dashboard is for this machine only.
func checkDevListen(listen string) error {
	if !httpapi.Loopback(listen) {
		return usagef("--listen %q: dev serves its dashboard on a loopback address only (127.0.0.1:PORT)", listen)
	}
	return nil
}

// startDevUI serves the HTTP API with the dashboard and /metrics for
// `queuety dev` on listen (a loopback address), with fresh random tokens
// unless QUEUETY_OPERATOR_TOKEN is set. It returns the lines that tell
// where: the dashboard's URL, the token to log in with and the metrics
// URL (dev prints them again now and then, so they stay in view). The
// dashboard shows w's webhook deliveries.
func startDevUI(ctx context.Context, client *queuety.Client, reg *queuety.Registry, w *queuety.Worker, listen, operator string, obs *observability) (*httpapi.Server, string, error) {
	if operator == "" {
		operator = randomToken()
	} else if err := httpapi.CheckToken("QUEUETY_OPERATOR_TOKEN", operator); err != nil {
		return nil, "", usageError{err}
	}
	ui, err := dashboard.New(dashboard.Config{Client: client, Registry: reg, OperatorToken: operator, Logger: client.Config().Logger,
		WebhookDeliveries: w.WebhookDeliveries})
	if err != nil {
		return nil, "", err
	}
	srv, err := httpapi.New(httpapi.Config{
		Listen: listen, WorkerToken: randomToken(), OperatorToken: operator,
		Registry: sessionRegistry(client), UI: ui, Logger: client.Config().Logger,
		Prometheus: obs.m.Handler(), Ready: obs.ready.check,
	})
	if err != nil {
		return nil, "", err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, "", err
	}
	banner := fmt.Sprintf("dashboard: http://%s%s\noperator token: %s\nmetrics: curl -H 'Authorization: Bearer %s' http://%s/metrics\n",
		srv.Addr(), dashboard.Prefix, operator, operator, srv.Addr())
	return srv, banner, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// workflowsUnsettled counts the demo's workflows that still have work
// coming without anyone acting: running ones, and those waiting for other
// workflows. A workflow waiting for a signal waits for the operator.
func workflowsUnsettled(ctx context.Context, client *queuety.Client) (int, error) {
	n := 0
	for _, s := range []workflow.Status{workflow.StatusRunning, workflow.StatusWaitingForWorkflows} {
		k, err := clientstore.Of(client).CountWorkflows(ctx, string(s))
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}
