// Package sdnotify speaks systemd's notification protocol (sd_notify(3)):
// a datagram such as "READY=1" sent to the unix socket $NOTIFY_SOCKET
// names, and the watchdog pings $WATCHDOG_USEC asks for. Without
// NOTIFY_SOCKET (not started by systemd with Type=notify) every call is a
// no-op.
package sdnotify

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// States sent by this package.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Watchdog = "WATCHDOG=1"
)

// Notifier sends states to one socket.
type Notifier struct {
	socket   string        // "" disables
	watchdog time.Duration // 0: no watchdog asked for
}

// FromEnv reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID through
// getenv (os.Getenv when nil). The watchdog applies only when WATCHDOG_PID
// is unset or names this process.
func FromEnv(getenv func(string) string) *Notifier {
	if getenv == nil {
		getenv = os.Getenv
	}
	n := &Notifier{socket: getenv("NOTIFY_SOCKET")}
	if usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64); err == nil && usec > 0 {
		pid := getenv("WATCHDOG_PID")
		if pid == "" || pid == strconv.Itoa(os.Getpid()) {
			n.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return n
}

// Enabled reports whether a socket was given.
func (n *Notifier) Enabled() bool { return n != nil && n.socket != "" }

// WatchdogInterval is how often to ping: half of WATCHDOG_USEC, or 0.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog / 2
}

// Notify sends state (one or more "KEY=value" lines).
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	name := n.socket
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:] // an abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// RunWatchdog pings every WatchdogInterval while healthy (nil: always)
// says so, until ctx ends. It returns at once when no watchdog was asked
// for.
func (n *Notifier) RunWatchdog(ctx context.Context, healthy func() bool) {
	every := n.WatchdogInterval()
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if healthy == nil || healthy() {
				_ = n.Notify(Watchdog)
			}
		}
	}
}
