package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/metrics"
)

// startTestListener serves the metrics listener on a free loopback port
// with idle as its idle timeout.
func startTestListener(t *testing.T, idle time.Duration) *observability {
	t.Helper()
	o := &observability{
		addr: "127.0.0.1:0", m: metrics.New(metrics.Config{Tables: &lazyTables{}}), ready: &readiness{},
		log: slog.New(slog.DiscardHandler), idleTimeout: idle,
	}
	require.NoError(t, o.startListener(context.Background(), io.Discard, "test"))
	t.Cleanup(o.stopListener)
	return o
}

// N12: a keep-alive connection left idle on the metrics listener is
// closed by the server (IdleTimeout, shortened here), as on the API
// listener; before, nothing ever closed it.
func TestMetricsListenerClosesIdleConnections(t *testing.T) {
	t.Parallel()
	o := startTestListener(t, 50*time.Millisecond)
	conn, err := net.Dial("tcp", o.l.addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "a keep-alive connection")

	// The deadline only bounds a broken test; the server closes the
	// connection long before it.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the idle connection")

	srv := metricsServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler), 0)
	require.Equal(t, metricsIdleTimeout, srv.IdleTimeout)
	require.Positive(t, srv.ReadHeaderTimeout)
	require.Positive(t, srv.ReadTimeout)
	require.Positive(t, srv.WriteTimeout)
}

// N10 on the token-less metrics listener: a rebinding page's Host is
// refused 421, a loopback Host is served.
func TestMetricsListenerRefusesForeignHost(t *testing.T) {
	t.Parallel()
	o := startTestListener(t, 0)
	get := func(host string) int {
		req, err := http.NewRequest(http.MethodGet, "http://"+o.l.addr()+"/metrics", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusMisdirectedRequest, get("rebind.evil.example:9090"))
	require.Equal(t, http.StatusOK, get("127.0.0.1:9090"))
	require.Equal(t, http.StatusOK, get("localhost:9090"))
}
