package phppool

import (
	"errors"
	"fmt"
	"time"
)

// Defaults. MaxJobs and MaxMemoryMB are Queuety's QUEUETY_WORKER_MAX_JOBS
// and QUEUETY_WORKER_MAX_MEMORY.
const (
	DefaultWorkers     = 2
	DefaultMaxJobs     = 1000
	DefaultMaxMemoryMB = 128
	// DefaultMemoryLimitMB is the resident memory at which a process is
	// killed mid-job. php-cli's own memory_limit is often -1 (none), and a
	// runaway job would otherwise take the machine's memory before
	// MaxMemoryMB is looked at, after the job.
	DefaultMemoryLimitMB = 1024
	DefaultStartTimeout  = 30 * time.Second
	DefaultStopGrace     = 10 * time.Second
	DefaultMaxCrashes    = 10
	DefaultCrashWindow   = time.Minute
)

// Config configures a Pool. Zero values take the defaults above.
type Config struct {
	// Command starts one PHP worker, e.g.
	// {"php", "php-bridge/bin/queuety-php-worker", "--bootstrap", "app.php"}.
	Command []string
	// Workers is the number of PHP processes.
	Workers int
	// MaxJobs recycles a process after this many jobs.
	MaxJobs int
	// MaxMemoryMB recycles a process once it reports more memory than this
	// (memory_get_usage(true) after a job).
	MaxMemoryMB int
	// MemoryLimitMB kills a process whose resident memory (VmRSS, polled
	// while it runs a job; Linux only) passes this, and fails the job: the
	// limit a PHP job cannot pass, where MaxMemoryMB only recycles after
	// the job. Negative: no limit.
	MemoryLimitMB int
	// StartTimeout bounds how long a process may take to load the
	// application and say it is ready.
	StartTimeout time.Duration
	// StopGrace is how long a process asked to exit (stdin closed) may take
	// before it is killed.
	StopGrace time.Duration
	// MaxCrashes crashes within CrashWindow make the pool give up.
	MaxCrashes  int
	CrashWindow time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return c, errors.New("phppool: no PHP command (e.g. php php-bridge/bin/queuety-php-worker --bootstrap app.php)")
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"Workers", &c.Workers, DefaultWorkers},
		{"MaxJobs", &c.MaxJobs, DefaultMaxJobs},
		{"MaxMemoryMB", &c.MaxMemoryMB, DefaultMaxMemoryMB},
		{"MaxCrashes", &c.MaxCrashes, DefaultMaxCrashes},
	} {
		if *f.v < 0 {
			return c, fmt.Errorf("phppool: %s %d: must not be negative", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.MemoryLimitMB == 0 {
		c.MemoryLimitMB = DefaultMemoryLimitMB
	}
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.StartTimeout, DefaultStartTimeout},
		{&c.StopGrace, DefaultStopGrace},
		{&c.CrashWindow, DefaultCrashWindow},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return c, nil
}
