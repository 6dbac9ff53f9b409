package queuety

import "time"

// The plugin's defaults for the settings below (src/Config.php).
const (
	DefaultResourceProfileWindow    = 60 * time.Minute // QUEUETY_RESOURCE_PROFILE_WINDOW_MINUTES
	DefaultResourceProfileTTL       = 30 * time.Second // QUEUETY_RESOURCE_PROFILE_TTL
	DefaultResourceMemoryHeadroomMB = 16               // QUEUETY_RESOURCE_MEMORY_HEADROOM_MB
	DefaultSystemMemoryHeadroomMB   = 32               // QUEUETY_RESOURCE_SYSTEM_MEMORY_HEADROOM_MB
	DefaultResourceTimeHeadroom     = 5 * time.Second  // QUEUETY_RESOURCE_TIME_HEADROOM_MS
)

// PluginSettings are the plugin's site-wide settings that shape what a
// worker does beyond claiming and running: debug rows and resource
// admission (cost budgets, memory and time headroom). `queuety work` reads
// them from wp-config's QUEUETY_* defines and the environment; the
// features that use them read them from here. Embedded in Config.
type PluginSettings struct {
	// Debug is QUEUETY_DEBUG: write the plugin's debug log rows.
	Debug bool
	// ResourceAdmissionOff is QUEUETY_RESOURCE_ADMISSION false (the
	// plugin's resource-aware admission is on by default).
	ResourceAdmissionOff bool
	// ResourceProfileWindow is QUEUETY_RESOURCE_PROFILE_WINDOW_MINUTES
	// (0: 60 min): how far back resource profiles look.
	ResourceProfileWindow time.Duration
	// ResourceProfileTTL is QUEUETY_RESOURCE_PROFILE_TTL (0: 30 s).
	ResourceProfileTTL time.Duration
	// ResourceMemoryHeadroomMB is QUEUETY_RESOURCE_MEMORY_HEADROOM_MB
	// (0: 16; negative: none).
	ResourceMemoryHeadroomMB int
	// SystemMemoryAwarenessOff is QUEUETY_RESOURCE_SYSTEM_MEMORY_AWARENESS
	// false (on by default).
	SystemMemoryAwarenessOff bool
	// SystemMemoryHeadroomMB is QUEUETY_RESOURCE_SYSTEM_MEMORY_HEADROOM_MB
	// (0: 32; negative: none).
	SystemMemoryHeadroomMB int
	// QueueCostBudgets and GroupCostBudgets are
	// QUEUETY_RESOURCE_QUEUE_COST_BUDGETS and _GROUP_COST_BUDGETS: the most
	// cost_units a queue's or concurrency group's processing jobs may add
	// up to. A job with cost_units > 0 that would pass it is deferred (left
	// pending; queuety/admission.go). Entries with a blank name or a limit
	// below 1 are dropped, as the plugin's normalize_int_map_constant
	// drops them.
	QueueCostBudgets map[string]int64
	GroupCostBudgets map[string]int64
	// ResourceTimeHeadroom is QUEUETY_RESOURCE_TIME_HEADROOM_MS (0: 5 s;
	// negative: none): time kept free at the end of a once-run.
	ResourceTimeHeadroom time.Duration
	// TimeBudget, when positive, is how long this run may take from the
	// worker's creation (the plugin's once-run window, its
	// max_execution_time): a job whose handler's average duration plus
	// the time headroom would not end inside it is deferred
	// (queuety/resource_admission.go). `work --once` sets it to the job
	// timeout, as the plugin's run(once) uses QUEUETY_MAX_EXECUTION_TIME;
	// `--max-time` to its time. 0: none, as the plugin's long-running loop.
	TimeBudget time.Duration
}

// MemoryHeadroomMB and the other getters give the effective values, the
// plugin's default for a zero field.
func (p PluginSettings) MemoryHeadroomMB() int {
	return headroom(p.ResourceMemoryHeadroomMB, DefaultResourceMemoryHeadroomMB)
}

func (p PluginSettings) SystemHeadroomMB() int {
	return headroom(p.SystemMemoryHeadroomMB, DefaultSystemMemoryHeadroomMB)
}

func (p PluginSettings) ProfileWindow() time.Duration {
	return orDefault(p.ResourceProfileWindow, DefaultResourceProfileWindow)
}

func (p PluginSettings) ProfileTTL() time.Duration {
	return orDefault(p.ResourceProfileTTL, DefaultResourceProfileTTL)
}

func (p PluginSettings) TimeHeadroom() time.Duration {
	switch {
	case p.ResourceTimeHeadroom < 0:
		return 0
	case p.ResourceTimeHeadroom == 0:
		return DefaultResourceTimeHeadroom
	}
	return p.ResourceTimeHeadroom
}

func headroom(v, def int) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
