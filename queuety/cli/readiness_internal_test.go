package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

// proxy forwards TCP connections to target until closed; close drops the
// listener and every connection, as a database going away would.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func readyz(check func(context.Context) error) int {
	w := httptest.NewRecorder()
	httpapi.ReadyHandler(check).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code
}

// /readyz is 503 while the database cannot be reached, and 503 on a
// database that is not migrated.
func TestReadinessFailsWhileDatabaseDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	p := newProxy(t, cfg.Addr)
	cfg.Addr = p.ln.Addr().String()
	cfg.Timeout = time.Second
	client, err := queuety.Open(ctx, queuety.Config{DSN: cfg.FormatDSN(), RescueSchedule: "off"})
	require.NoError(t, err)
	defer client.Close()

	r := &readiness{st: clientstore.Of(client)}
	require.Equal(t, http.StatusServiceUnavailable, readyz(r.check), "not migrated yet")
	_, err = client.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, readyz(r.check))

	p.close()
	require.Equal(t, http.StatusServiceUnavailable, readyz(r.check), "database down")
}

// /readyz is 503 before the worker starts and from the moment it starts
// stopping, while its running job still finishes.
func TestReadinessFailsWhileWorkerStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	client, err := queuety.Open(ctx, queuety.Config{DSN: dsn, RescueSchedule: "off", PollInterval: 10 * time.Millisecond,
		ShutdownGrace: 10 * time.Second})
	require.NoError(t, err)
	defer client.Close()
	_, err = client.Migrate(ctx)
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	reg := queuety.NewRegistry()
	reg.HandleFunc("block", func(context.Context, *queuety.Job) error {
		close(started)
		<-release
		return nil
	})
	w, err := client.NewWorker(reg)
	require.NoError(t, err)
	r := &readiness{st: clientstore.Of(client), worker: w.Ready}
	require.Equal(t, http.StatusServiceUnavailable, readyz(r.check), "not started")
	require.NoError(t, w.Start(ctx))
	require.Equal(t, http.StatusOK, readyz(r.check))

	_, err = client.Dispatch(ctx, "block", map[string]any{})
	require.NoError(t, err)
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for readyz(r.check) != http.StatusServiceUnavailable {
		require.True(t, time.Now().Before(deadline), "still ready while stopping")
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned before the job finished: %v", err)
	default:
	}
	close(release)
	require.NoError(t, <-stopped)
	require.Equal(t, http.StatusServiceUnavailable, readyz(r.check), "stopped")
}
