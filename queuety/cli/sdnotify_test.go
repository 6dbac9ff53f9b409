package cli_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under systemd (Type=notify) work and serve send READY=1 once they
// serve, WATCHDOG=1 at half of WATCHDOG_USEC, and STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	for _, args := range [][]string{
		{"work", "--http", "127.0.0.1:0", "--poll-interval", "10ms", "--rescue-schedule", "off"},
		{"serve", "--listen", "127.0.0.1:0"},
	} {
		dir, err := os.MkdirTemp("", "sd")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		path := filepath.Join(dir, "notify")
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		read := func() string {
			t.Helper()
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			buf := make([]byte, 256)
			n, err := conn.Read(buf)
			require.NoError(t, err, args[0])
			return string(buf[:n])
		}

		d := startListening(t, exec.Command(bin, append([]string{"--dsn", dsn}, args...)...),
			"QUEUETY_WORKER_TOKEN=wt-0123456789abcdef", "QUEUETY_OPERATOR_TOKEN=ot-0123456789abcdef",
			"NOTIFY_SOCKET="+path, "WATCHDOG_USEC=200000")
		require.Equal(t, "READY=1", read(), args[0])
		require.Equal(t, "WATCHDOG=1", read(), args[0])
		require.Equal(t, "WATCHDOG=1", read(), args[0])
		require.NoError(t, d.cmd.Process.Signal(os.Interrupt))
		for {
			if s := read(); s == "STOPPING=1" {
				break
			} else {
				require.Equal(t, "WATCHDOG=1", s, args[0])
			}
		}
		<-d.exited
		require.NoError(t, d.waitErr, d.stderr.String())
	}
}
