package cli

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// intRange is the accepted range of an integer worker flag; off, when
// set, is the one value outside it that means "off".
type intRange struct {
	name     string
	lo, hi   int
	off      *int
	whyLower string
}

// durRange is the accepted range of a duration worker flag: min up to max
// (max 0: no ceiling); zero and negatives only where they are a documented
// setting.
type durRange struct {
	name        string
	min, max    time.Duration
	zeroOK      bool // 0 is a documented value (the default, or "none")
	negativeOff bool // a negative value turns the service off
	why         string
}

var minusOne = -1

// workerIntFlags bound the integer worker flags. Each message names the
// flag with its dashes, so the user knows what to change.
var workerIntFlags = []intRange{
	{name: "concurrency", lo: 1, hi: 10000},
	{name: "claim-lanes", lo: 1, hi: queuety.MaxClaimLanes},
	{name: "max-claim-batch", lo: 1, hi: queuety.MaxMaxClaimBatch},
	{name: "step-batch", lo: 1, hi: queuety.MaxWorkflowStepBatch, whyLower: " (1: each step its own transaction)"},
	{name: "chain-steps", lo: 1, hi: queuety.MaxWorkflowChain, off: &minusOne, whyLower: " (-1: every step through the claim)"},
}

const busyLoop = "a shorter one makes an idle worker query the database in a busy loop"

// workerDurFlags bound the duration worker flags.
var workerDurFlags = []durRange{
	{name: "poll-interval", min: queuety.MinPollInterval, why: busyLoop},
	{name: "wait-sweep-interval", min: queuety.MinServiceInterval, negativeOff: true, why: busyLoop},
	{name: "signal-poll-interval", min: queuety.MinServiceInterval, negativeOff: true, why: busyLoop},
	{name: "deadline-interval", min: queuety.MinServiceInterval, negativeOff: true, why: busyLoop},
	{name: "schedule-interval", min: queuety.MinServiceInterval, negativeOff: true, why: busyLoop},
	{name: "heartbeat-interval", min: queuety.MinHeartbeatInterval, zeroOK: true, why: "0: stale-timeout/4, at most 1m"},
	{name: "stale-timeout", min: time.Second, why: "reserved_at has one-second resolution"},
	{name: "job-timeout", min: time.Second},
	{name: "shutdown-grace", zeroOK: true, why: "0: the default 30s"},
}

// checkWorkerFlags refuses worker flag values that cannot work or would
// hurt (busy loops, unbounded transactions, negatives that mean nothing)
// before anything connects. Flags the command lacks or the user left at
// their defaults are skipped: the defaults are valid.
func checkWorkerFlags(c *cli.Context) error {
	for _, f := range workerIntFlags {
		if !c.IsSet(f.name) {
			continue
		}
		v := c.Int(f.name)
		if (f.off != nil && v == *f.off) || (v >= f.lo && v <= f.hi) {
			continue
		}
		return usagef("--%s %d: must be between %d and %d%s", f.name, v, f.lo, f.hi, f.whyLower)
	}
	for _, f := range workerDurFlags {
		if !c.IsSet(f.name) {
			continue
		}
		if err := f.check(c.Duration(f.name)); err != nil {
			return err
		}
	}
	if c.IsSet("max-conns") && c.Int("max-conns") != 0 && c.Int("max-conns") < 2 {
		return usagef("--max-conns %d: need at least 2 (0: concurrency/4+4); claims and completions run side by side", c.Int("max-conns"))
	}
	return checkWorkerRelations(c)
}

// checkWorkerRelations checks the worker flags Config.Validate would
// otherwise refuse under its field names.
func checkWorkerRelations(c *cli.Context) error {
	if spec := strings.TrimSpace(c.String("rescue-schedule")); c.IsSet("rescue-schedule") && !strings.EqualFold(spec, "off") {
		if _, err := cron.ParseStandard(spec); err != nil {
			return usagef("--rescue-schedule %q: %v (a 5-field cron spec, @every 5m, or off)", c.String("rescue-schedule"), err)
		}
	}
	stale, hb := c.Duration("stale-timeout"), c.Duration("heartbeat-interval")
	if c.IsSet("heartbeat-interval") && hb > 0 && stale > 0 && hb >= stale {
		return usagef("--heartbeat-interval %s: must be shorter than --stale-timeout %s, or running jobs get rescued", hb, stale)
	}
	if ns := c.String("namespace"); c.IsSet("namespace") && len(ns) > 128 {
		return usagef("--namespace %q: longer than 128 characters", ns)
	}
	return nil
}

func (f durRange) check(d time.Duration) error {
	why := ""
	if f.why != "" {
		why = " (" + f.why + ")"
	}
	switch {
	case d < 0 && f.negativeOff:
		return nil
	case d < 0:
		return usagef("--%s %s: must not be negative%s", f.name, d, why)
	case d == 0 && f.zeroOK:
		return nil
	case d < f.min || (d == 0 && !f.zeroOK):
		off := ""
		if f.negativeOff {
			off = ", or negative to turn it off"
		}
		return usagef("--%s %s: must be at least %s%s%s", f.name, d, max(f.min, time.Nanosecond), off, why)
	case f.max > 0 && d > f.max:
		return usagef("--%s %s: at most %s%s", f.name, d, f.max, why)
	}
	return nil
}

// secondsFlags take plain seconds ("600") as well as durations, like
// their environment variables (PHP's QUEUETY_STALE_TIMEOUT is seconds).
// dispatch --delay takes the plugin's seconds too (wp queuety dispatch
// --delay=60).
var secondsFlags = map[string]bool{"stale-timeout": true, "job-timeout": true, "shutdown-grace": true, "max-time": true, "delay": true}

// plainSeconds turns "600" into "600s" for a seconds flag's value.
func plainSeconds(flag, value string) string {
	if secondsFlags[flag] && value != "" && strings.Trim(value, "0123456789") == "" {
		return value + "s"
	}
	return value
}
