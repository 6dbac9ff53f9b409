package queuety

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// resourceAdmission is the rest of the plugin's ResourceManager::admit,
// after the concurrency group and cost budgets (admission.go): with
// QUEUETY_RESOURCE_ADMISSION on (the default) and a handler that has
// completed within the profile window, a job is deferred
//
//   - when its handler's largest memory peak plus the system headroom
//     (QUEUETY_RESOURCE_SYSTEM_MEMORY_HEADROOM_MB) would not fit in the
//     memory the host or its cgroup has available
//     (QUEUETY_RESOURCE_SYSTEM_MEMORY_AWARENESS);
//   - in a run with a time budget (work --once, --max-time), when its
//     handler's average duration plus QUEUETY_RESOURCE_TIME_HEADROOM_MS
//     would not end within the budget.
//
// The plugin's third check, the worker's own usage plus the peak and
// QUEUETY_RESOURCE_MEMORY_HEADROOM_MB against QUEUETY_WORKER_MAX_MEMORY,
// has no process to guard here: Go handlers share one process without such
// a limit, and the pool process a PHP job will get is not known at the
// claim (one above --php-max-memory is recycled after its job). A
// deferred job stays pending with its attempt unspent, as the plugin's
// unclaim leaves it.
type resourceAdmission struct {
	settings PluginSettings
	now      func() time.Time
	start    time.Time // the run's start, for the time budget
	// memory reads the memory available to this process's host or cgroup
	// (systemMemory); a test replaces it.
	memory func() (availableKB int64, ok bool)

	mu       sync.Mutex
	profiles map[string]cachedProfile
}

type cachedProfile struct {
	p    store.ResourceProfile
	read time.Time
}

func newResourceAdmission(settings PluginSettings, now func() time.Time) *resourceAdmission {
	return &resourceAdmission{settings: settings, now: now, start: now(), memory: systemMemory}
}

// refusal is why r cannot start now, or "" (the plugin's reasons).
func (a *resourceAdmission) refusal(ctx context.Context, tx *store.ClaimTx, r *store.JobRow) (string, error) {
	if a.settings.ResourceAdmissionOff {
		return "", nil
	}
	p, err := a.profile(ctx, tx, r.Handler)
	if err != nil || p.Samples < 1 {
		return "", err
	}
	if p.MaxMemoryKB > 0 && !a.settings.SystemMemoryAwarenessOff {
		if avail, ok := a.memory(); ok && avail > 0 && p.MaxMemoryKB+int64(a.settings.SystemHeadroomMB())*1024 > avail {
			return fmt.Sprintf("Projected memory use for %s exceeds the available system memory headroom.", r.Handler), nil
		}
	}
	if budget := a.settings.TimeBudget; budget > 0 && p.AvgDurationMS > 0 {
		elapsed := a.now().Sub(a.start)
		if elapsed+time.Duration(p.AvgDurationMS)*time.Millisecond+a.settings.TimeHeadroom() > budget {
			return fmt.Sprintf("Projected duration for %s exceeds the once-run time budget.", r.Handler), nil
		}
	}
	return "", nil
}

// profile is the handler's profile, read again after QUEUETY_RESOURCE_PROFILE_TTL
// (the plugin's cache of it), on the claim's connection.
func (a *resourceAdmission) profile(ctx context.Context, tx *store.ClaimTx, handler string) (store.ResourceProfile, error) {
	now := a.now()
	a.mu.Lock()
	c, ok := a.profiles[handler]
	a.mu.Unlock()
	if ok && now.Sub(c.read) < a.settings.ProfileTTL() {
		return c.p, nil
	}
	p, err := tx.HandlerResourceProfile(ctx, handler, now.Add(-a.settings.ProfileWindow()))
	if err != nil {
		return p, err
	}
	a.mu.Lock()
	if a.profiles == nil {
		a.profiles = map[string]cachedProfile{}
	}
	a.profiles[handler] = cachedProfile{p: p, read: now}
	a.mu.Unlock()
	return p, nil
}

// systemMemory is ResourceManager::system_memory_snapshot's available_kb:
// the cgroup v2 limit less its usage, else cgroup v1's, else
// /proc/meminfo's MemAvailable (MemFree without it).
func systemMemory() (int64, bool) {
	if kb, ok := cgroupAvailable("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", false); ok {
		return kb, true
	}
	if kb, ok := cgroupAvailable("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes", true); ok {
		return kb, true
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return memInfoAvailable(string(b))
}

// cgroupAvailable reads a cgroup's limit and usage in bytes; "max" (v2)
// or a v1 limit above 2^60 means none.
func cgroupAvailable(limitPath, usagePath string, v1 bool) (int64, bool) {
	limit, ok1 := readBytes(limitPath)
	used, ok2 := readBytes(usagePath)
	if !ok1 || !ok2 || (v1 && limit > 1<<60) {
		return 0, false
	}
	return max(0, limit/1024-used/1024), true
}

func readBytes(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false // "max", or not a number
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// memInfoAvailable reads /proc/meminfo's MemAvailable (else MemFree), in
// kB, when MemTotal is there too.
func memInfoAvailable(text string) (int64, bool) {
	info := map[string]int64{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" || !strings.HasSuffix(f[0], ":") {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			info[strings.TrimSuffix(f[0], ":")] = n
		}
	}
	avail, ok := info["MemAvailable"]
	if !ok {
		avail, ok = info["MemFree"]
	}
	if _, total := info["MemTotal"]; !total || !ok {
		return 0, false
	}
	return avail, true
}
