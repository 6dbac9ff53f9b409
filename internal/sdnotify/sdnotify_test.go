package sdnotify

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listen binds a unixgram socket in a short temporary directory (socket
// paths are limited to about 108 bytes).
func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn, path
}

func read(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNotifyAndWatchdog(t *testing.T) {
	t.Parallel()
	conn, path := listen(t)
	n := FromEnv(env(map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"}))
	require.True(t, n.Enabled())
	require.Equal(t, 50*time.Millisecond, n.WatchdogInterval())
	require.NoError(t, n.Notify(Ready))
	require.Equal(t, "READY=1", read(t, conn))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.RunWatchdog(ctx, nil); close(done) }()
	require.Equal(t, "WATCHDOG=1", read(t, conn))
	require.Equal(t, "WATCHDOG=1", read(t, conn))
	cancel()
	<-done
	require.NoError(t, n.Notify(Stopping))
	require.Equal(t, "STOPPING=1", read(t, conn))
}

func TestNotifyDisabled(t *testing.T) {
	t.Parallel()
	n := FromEnv(env(nil))
	require.False(t, n.Enabled())
	require.NoError(t, n.Notify(Ready))
	require.Zero(t, n.WatchdogInterval())
	n.RunWatchdog(context.Background(), nil) // returns at once

	// A watchdog meant for another process is not ours.
	_, path := listen(t)
	n = FromEnv(env(map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": strconv.Itoa(os.Getpid() + 1)}))
	require.Zero(t, n.WatchdogInterval())
}
