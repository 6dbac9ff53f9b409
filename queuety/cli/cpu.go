package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	store "github.com/queuety-go/queuety/sql"
)

// CPUCost is the CPU time one unit of a benchmark's work (a job, a step, a
// workflow) took, in the daemon (this process) and in the database server,
// in microseconds. On a small machine the two share the cores, so the
// server's share often sets the throughput; it is measured only when the
// server runs on this machine and its process can be read (ServerMeasured).
type CPUCost struct {
	Unit           string  `json:"unit"`
	DaemonUS       float64 `json:"daemon_us"`
	ServerUS       float64 `json:"server_us,omitempty"`
	ServerMeasured bool    `json:"server_measured"`
}

// String is how the text output shows it.
func (c CPUCost) String() string {
	server := "server n/a (not on this machine)"
	if c.ServerMeasured {
		server = fmt.Sprintf("server %.0f µs", c.ServerUS)
	}
	return fmt.Sprintf("CPU per %s: daemon %.0f µs, %s", c.Unit, c.DaemonUS, server)
}

// cpuMeter reads both processes' CPU time at the start of a timed part.
type cpuMeter struct {
	serverPID      int // 0: the server's process is not readable here
	self0, server0 time.Duration
}

// startCPU finds the server's process (its pid file on this host, naming a
// mariadbd or mysqld) and reads the starting figures.
func startCPU(ctx context.Context, st *store.Store) cpuMeter {
	m := cpuMeter{serverPID: serverPID(ctx, st)}
	m.self0 = selfCPU()
	if m.serverPID != 0 {
		if t, err := procCPU(m.serverPID); err == nil {
			m.server0 = t
		} else {
			m.serverPID = 0
		}
	}
	return m
}

// per returns the CPU spent since start divided over n units.
func (m cpuMeter) per(n int, unit string) CPUCost {
	var sum cpuSum
	sum.add(m)
	return sum.per(n, unit)
}

// cpuSum adds up the CPU of several timed parts (cpuMeter.per of each
// would round each part's share to its unit).
type cpuSum struct {
	daemon, server time.Duration
	parts          int
	serverParts    int // parts whose server figure could be read
}

// add adds the CPU spent since m started.
func (s *cpuSum) add(m cpuMeter) {
	s.parts++
	s.daemon += selfCPU() - m.self0
	if m.serverPID != 0 {
		if t, err := procCPU(m.serverPID); err == nil {
			s.server += t - m.server0
			s.serverParts++
		}
	}
}

// per divides the sum over n units; the server's figure only when every
// part had one.
func (s *cpuSum) per(n int, unit string) CPUCost {
	c := CPUCost{Unit: unit}
	if n <= 0 {
		return c
	}
	c.DaemonUS = float64(s.daemon.Microseconds()) / float64(n)
	if s.parts > 0 && s.serverParts == s.parts {
		c.ServerUS = float64(s.server.Microseconds()) / float64(n)
		c.ServerMeasured = true
	}
	return c
}

func serverPID(ctx context.Context, st *store.Store) int {
	pidFile, host, err := st.ServerProcess(ctx)
	if err != nil || pidFile == "" {
		return 0
	}
	if h, _ := os.Hostname(); h != host {
		return 0
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	// The pid file of a server on another machine with our host name, or a
	// stale one, must not make us read an unrelated process.
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if name := strings.TrimSpace(string(comm)); err != nil || (name != "mariadbd" && name != "mysqld") {
		return 0
	}
	return pid
}

// selfCPU is this process's user+system CPU time so far (getrusage: finer
// than /proc's 10 ms ticks).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is pid's user+system CPU time so far, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}
