package workflow

import (
	"github.com/queuety-go/queuety/internal/phpjson"
)

// RuntimePayloadKey is the job payload key carrying per-job runtime rules
// (max_attempts, backoff, rate_limit, timeout_seconds). The worker reads
// it back; handlers never see it.
const RuntimePayloadKey = "__queuety_runtime"

// DispatchDefaults are the workflow-level settings step jobs fall back to:
// _queue, _priority and _max_attempts.
type DispatchDefaults struct {
	Queue       string
	Priority    Priority
	MaxAttempts int64
}

// DispatchDefaults returns the state's defaults, read as the runtime does.
func (s *State) DispatchDefaults() DispatchDefaults {
	return DispatchDefaults{Queue: s.Queue(), Priority: s.Priority(), MaxAttempts: s.MaxAttempts()}
}

// StepDispatchOptions are the job columns and payload resolved for one
// handler job of a step (Queuety's StepDispatchOptions::resolve).
type StepDispatchOptions struct {
	Queue    string
	Priority Priority
	// DelaySeconds is the job delay asked for by the definition
	// (job_delay_seconds, job_delay, delay, config.delay).
	DelaySeconds int64
	// MaxAttempts is the jobs.max_attempts value (at least 1); the
	// unclamped value goes into the payload's __queuety_runtime.
	MaxAttempts      int64
	ConcurrencyGroup string // "" = none
	ConcurrencyLimit int64  // 0 = none
	CostUnits        int64
	// Payload is the job payload with __queuety_runtime set.
	Payload *phpjson.Object
	// WorkerSession is the definition's worker_session object, null when
	// the job is not session-bound (placeholder jobs never are); newStepJob
	// validates it and fills the session columns.
	WorkerSession phpjson.Value
}

// ResolveStepDispatchOptions resolves the options of one handler job.
//
// def is the step (or merged parallel branch) definition, nil for a legacy
// string step. Each option is taken from the definition's own key, then its
// grouped form (config / retry / resources), then the handler's metadata,
// then the workflow defaults. Integers must be real JSON integers, as in
// PHP (a numeric string is ignored). payload is not modified.
func ResolveStepDispatchOptions(def *phpjson.Object, handler string, defaults DispatchDefaults, payload *phpjson.Object, defaultCostUnits int64, meta HandlerMetadata) StepDispatchOptions {
	config := phpjson.AsArray(phpjson.Get(def, "config"))
	retry := phpjson.ArrayReplace(phpjson.AsArray(phpjson.Get(config, "retry")), phpjson.AsArray(phpjson.Get(def, "retry")))
	resources := phpjson.ArrayReplace(phpjson.AsArray(phpjson.Get(config, "resources")), phpjson.AsArray(phpjson.Get(def, "resources")))

	// Each chain mirrors PHP's `$a['x'] ?? $b['x'] ?? null` and only then
	// validates, so a present but invalid value hides a later valid one.
	opts := StepDispatchOptions{Queue: defaults.Queue, Priority: defaults.Priority}
	if !IsPlaceholderHandler(handler) {
		opts.WorkerSession = phpjson.Get(def, KeyWorkerSession)
	}
	// Routing precedence (durable-workflow's RoutingResolver): the step's
	// own queue, then its worker session's, then the handler's, then the
	// workflow's.
	if q, ok := phpjson.StringValue(phpjson.Coalesce(phpjson.Get(def, "queue"), phpjson.Get(config, "queue"))); ok {
		opts.Queue = q
	} else if q, ok := sessionQueue(opts.WorkerSession); ok {
		opts.Queue = q
	} else if meta.Queue != "" {
		opts.Queue = meta.Queue
	}
	if p, ok := priorityValue(phpjson.Coalesce(phpjson.Get(def, "priority"), phpjson.Get(config, "priority"))); ok {
		opts.Priority = p
	}

	maxAttempts := defaults.MaxAttempts
	if n, ok := phpjson.PositiveInt(phpjson.Coalesce(phpjson.Get(def, "max_attempts"), phpjson.Get(retry, "max_attempts"))); ok {
		maxAttempts = n
	} else if meta.MaxAttempts != 0 {
		maxAttempts = meta.MaxAttempts
	}
	backoff := backoffValue(phpjson.Coalesce(phpjson.Get(def, "backoff"), phpjson.Get(retry, "backoff")))
	if backoff.IsNull() {
		backoff = meta.Backoff
	}
	rateLimit := rateLimitValue(phpjson.Coalesce(phpjson.Get(def, "rate_limit"), phpjson.Get(resources, "rate_limit")))
	if rateLimit == nil {
		rateLimit = meta.RateLimit
	}

	if g, ok := phpjson.StringValue(phpjson.Coalesce(phpjson.Get(def, "concurrency_group"), phpjson.Get(resources, "concurrency_group"))); ok {
		opts.ConcurrencyGroup = g
	} else {
		opts.ConcurrencyGroup = meta.ConcurrencyGroup
	}
	if n, ok := phpjson.PositiveInt(phpjson.Coalesce(phpjson.Get(def, "concurrency_limit"), phpjson.Get(resources, "concurrency_limit"))); ok {
		opts.ConcurrencyLimit = n
	} else {
		opts.ConcurrencyLimit = meta.ConcurrencyLimit
	}
	if opts.ConcurrencyGroup == "" {
		opts.ConcurrencyLimit = 0
	}

	opts.CostUnits = defaultCostUnits
	if n, ok := phpjson.NonNegativeInt(phpjson.Coalesce(phpjson.Get(def, "cost_units"), phpjson.Get(resources, "cost_units"))); ok {
		opts.CostUnits = n
	} else if meta.CostUnits != 0 {
		opts.CostUnits = meta.CostUnits
	}
	opts.CostUnits = max(0, opts.CostUnits)

	timeout := durationSeconds(phpjson.Coalesce(phpjson.Get(def, "timeout_seconds"), phpjson.Get(def, "timeout"), phpjson.Get(config, "timeout")))
	opts.DelaySeconds = durationSeconds(phpjson.Coalesce(phpjson.Get(def, "job_delay_seconds"), phpjson.Get(def, "job_delay"), phpjson.Get(def, "delay"), phpjson.Get(config, "delay")))
	opts.MaxAttempts = max(1, maxAttempts)

	runtime := phpjson.NewObject().Set("max_attempts", phpjson.Int(maxAttempts))
	if !backoff.IsNull() {
		runtime.Set("backoff", backoff)
	}
	if rateLimit != nil {
		runtime.Set("rate_limit", rateLimit.Value())
	}
	if timeout > 0 {
		runtime.Set("timeout_seconds", phpjson.Int(timeout))
	}
	if payload == nil {
		payload = phpjson.NewObject()
	}
	opts.Payload = phpjson.CloneObject(payload).Set(RuntimePayloadKey, phpjson.ObjectValue(runtime))
	return opts
}

// priorityValue reads a definition's priority: an int 0..3 or a name.
func priorityValue(v phpjson.Value) (Priority, bool) {
	if v.IsInt() {
		n, _ := v.AsInt64()
		p := Priority(n)
		return p, p.Valid()
	}
	if s, ok := v.AsString(); ok {
		return ParsePriority(s)
	}
	return 0, false
}

// backoffValue reads a definition's backoff: a known strategy name, or a
// list of delays in seconds (negative ints become 0, non-ints are dropped,
// an empty result is no backoff). Null means none.
func backoffValue(v phpjson.Value) phpjson.Value {
	if s, ok := v.AsString(); ok {
		switch s {
		case "fixed", "linear", "exponential":
			return v
		}
		return phpjson.Null()
	}
	if !phpjson.IsArray(v) {
		return phpjson.Null()
	}
	var delays []phpjson.Value
	for _, d := range phpjson.Values(v) {
		if n, ok := d.AsInt64(); ok && d.IsInt() {
			delays = append(delays, phpjson.Int(max(0, n)))
		}
	}
	if len(delays) == 0 {
		return phpjson.Null()
	}
	return phpjson.List(delays...)
}

// rateLimitValue reads {max, window}, {max_executions, window_seconds} or
// [max, window]; both must be integers ≥ 1.
func rateLimitValue(v phpjson.Value) *RateLimit {
	if !phpjson.IsArray(v) {
		return nil
	}
	maxV, okMax := phpjson.PositiveInt(phpjson.Coalesce(phpjson.Index(v, "max"), phpjson.Index(v, "max_executions"), phpjson.Index(v, "0")))
	window, okWindow := phpjson.PositiveInt(phpjson.Coalesce(phpjson.Index(v, "window"), phpjson.Index(v, "window_seconds"), phpjson.Index(v, "1")))
	if !okMax || !okWindow {
		return nil
	}
	return &RateLimit{Max: maxV, Window: window}
}

// durationSeconds reads a duration: an int of seconds (negative is 0), or
// {seconds, minutes, hours, days} with each part cast with (int).
func durationSeconds(v phpjson.Value) int64 {
	if n, ok := v.AsInt64(); ok && v.IsInt() {
		return max(0, n)
	}
	if !phpjson.IsArray(v) {
		return 0
	}
	part := func(key string) int64 {
		p := phpjson.Index(v, key)
		if !phpjson.IsScalar(p) {
			return 0
		}
		return phpjson.ToInt(p)
	}
	return max(0, part("seconds")+part("minutes")*60+part("hours")*3600+part("days")*86400)
}

// stepPayload is the payload a definition gives its handler job (its
// "payload" array with string keys; empty when none). nil def is a legacy
// string step.
func stepPayload(def *phpjson.Object) *phpjson.Object {
	return phpjson.CloneObject(phpjson.AsArray(phpjson.Get(def, "payload")))
}

// ParallelBranches returns the branches a parallel step dispatches: its
// serialized "branches" when that is an array (string entries and objects
// naming a class or handler), else one per non-blank "handlers" entry.
// Each branch is an object with "class" set to its trimmed handler.
func ParallelBranches(step *phpjson.Object) []*phpjson.Object {
	var out []*phpjson.Object
	if branches := phpjson.Get(step, "branches"); phpjson.IsArray(branches) {
		for _, b := range phpjson.Values(branches) {
			if nb := normalizeBranch(b); nb != nil {
				out = append(out, nb)
			}
		}
		return out
	}
	for _, h := range phpjson.Values(phpjson.Get(step, "handlers")) {
		if s, ok := h.AsString(); ok && phpjson.Trim(s) != "" {
			out = append(out, phpjson.NewObject().Set("class", phpjson.String(phpjson.Trim(s))))
		}
	}
	return out
}

func normalizeBranch(b phpjson.Value) *phpjson.Object {
	if s, ok := b.AsString(); ok {
		if phpjson.Trim(s) == "" {
			return nil
		}
		return phpjson.NewObject().Set("class", phpjson.String(phpjson.Trim(s)))
	}
	if !phpjson.IsArray(b) {
		return nil
	}
	// Only string keys survive; PHP turns "0", "1", ... into int keys.
	out := phpjson.NewObject()
	for k, v := range phpjson.AsArray(b).All() {
		if !phpjson.IsIntKey(k) {
			out.Set(k, v)
		}
	}
	handler := branchHandler(out)
	if handler == "" {
		return nil
	}
	return out.Set("class", phpjson.String(handler))
}

// branchHandler is the handler of a branch: its "class", else "handler".
func branchHandler(branch *phpjson.Object) string {
	h, _ := phpjson.StringValue(phpjson.Coalesce(phpjson.Get(branch, "class"), phpjson.Get(branch, "handler")))
	return h
}

// mergeParallelBranch returns the definition one branch job is dispatched
// with: the step's keys (minus branches, handlers and type) overridden by
// the branch's, with config, retry, resources and payload merged one level
// deep.
func mergeParallelBranch(step, branch *phpjson.Object) *phpjson.Object {
	parent := phpjson.CloneObject(step)
	parent.Delete("branches")
	parent.Delete("handlers")
	parent.Delete("type")
	merged := phpjson.ArrayReplace(parent, branch)
	for _, key := range []string{"config", "retry", "resources", "payload"} {
		pv, bv := phpjson.Get(parent, key), phpjson.Get(branch, key)
		if !phpjson.IsArray(pv) && !phpjson.IsArray(bv) {
			continue
		}
		merged.Set(key, phpjson.ObjectValue(phpjson.ArrayReplace(arrayOrEmpty(pv), arrayOrEmpty(bv))))
	}
	return merged
}

func arrayOrEmpty(v phpjson.Value) *phpjson.Object {
	if !phpjson.IsArray(v) {
		return phpjson.NewObject()
	}
	return phpjson.AsArray(v)
}
