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
	config := phpArray(get(def, "config"))
	retry := arrayReplace(phpArray(get(config, "retry")), phpArray(get(def, "retry")))
	resources := arrayReplace(phpArray(get(config, "resources")), phpArray(get(def, "resources")))

	// Each chain mirrors PHP's `$a['x'] ?? $b['x'] ?? null` and only then
	// validates, so a present but invalid value hides a later valid one.
	opts := StepDispatchOptions{Queue: defaults.Queue, Priority: defaults.Priority}
	if !IsPlaceholderHandler(handler) {
		opts.WorkerSession = get(def, KeyWorkerSession)
	}
	// Routing precedence (durable-workflow's RoutingResolver): the step's
	// own queue, then its worker session's, then the handler's, then the
	// workflow's.
	if q, ok := stringValue(coalesce(get(def, "queue"), get(config, "queue"))); ok {
		opts.Queue = q
	} else if q, ok := sessionQueue(opts.WorkerSession); ok {
		opts.Queue = q
	} else if meta.Queue != "" {
		opts.Queue = meta.Queue
	}
	if p, ok := priorityValue(coalesce(get(def, "priority"), get(config, "priority"))); ok {
		opts.Priority = p
	}

	maxAttempts := defaults.MaxAttempts
	if n, ok := positiveInt(coalesce(get(def, "max_attempts"), get(retry, "max_attempts"))); ok {
		maxAttempts = n
	} else if meta.MaxAttempts != 0 {
		maxAttempts = meta.MaxAttempts
	}
	backoff := backoffValue(coalesce(get(def, "backoff"), get(retry, "backoff")))
	if backoff.IsNull() {
		backoff = meta.Backoff
	}
	rateLimit := rateLimitValue(coalesce(get(def, "rate_limit"), get(resources, "rate_limit")))
	if rateLimit == nil {
		rateLimit = meta.RateLimit
	}

	if g, ok := stringValue(coalesce(get(def, "concurrency_group"), get(resources, "concurrency_group"))); ok {
		opts.ConcurrencyGroup = g
	} else {
		opts.ConcurrencyGroup = meta.ConcurrencyGroup
	}
	if n, ok := positiveInt(coalesce(get(def, "concurrency_limit"), get(resources, "concurrency_limit"))); ok {
		opts.ConcurrencyLimit = n
	} else {
		opts.ConcurrencyLimit = meta.ConcurrencyLimit
	}
	if opts.ConcurrencyGroup == "" {
		opts.ConcurrencyLimit = 0
	}

	opts.CostUnits = defaultCostUnits
	if n, ok := nonNegativeInt(coalesce(get(def, "cost_units"), get(resources, "cost_units"))); ok {
		opts.CostUnits = n
	} else if meta.CostUnits != 0 {
		opts.CostUnits = meta.CostUnits
	}
	opts.CostUnits = max(0, opts.CostUnits)

	timeout := durationSeconds(coalesce(get(def, "timeout_seconds"), get(def, "timeout"), get(config, "timeout")))
	opts.DelaySeconds = durationSeconds(coalesce(get(def, "job_delay_seconds"), get(def, "job_delay"), get(def, "delay"), get(config, "delay")))
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
	opts.Payload = cloneObject(payload).Set(RuntimePayloadKey, phpjson.ObjectValue(runtime))
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
	if !isArray(v) {
		return phpjson.Null()
	}
	var delays []phpjson.Value
	for _, d := range phpValues(v) {
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
	if !isArray(v) {
		return nil
	}
	maxV, okMax := positiveInt(coalesce(phpIndex(v, "max"), phpIndex(v, "max_executions"), phpIndex(v, "0")))
	window, okWindow := positiveInt(coalesce(phpIndex(v, "window"), phpIndex(v, "window_seconds"), phpIndex(v, "1")))
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
	if !isArray(v) {
		return 0
	}
	part := func(key string) int64 {
		p := phpIndex(v, key)
		if !isScalar(p) {
			return 0
		}
		return toInt(p)
	}
	return max(0, part("seconds")+part("minutes")*60+part("hours")*3600+part("days")*86400)
}

// StepPayload is the payload a definition gives its handler job (its
// "payload" array with string keys; empty when none). nil def is a legacy
// string step.
func StepPayload(def *phpjson.Object) *phpjson.Object {
	return cloneObject(phpArray(get(def, "payload")))
}

// ParallelBranches returns the branches a parallel step dispatches: its
// serialized "branches" when that is an array (string entries and objects
// naming a class or handler), else one per non-blank "handlers" entry.
// Each branch is an object with "class" set to its trimmed handler.
func ParallelBranches(step *phpjson.Object) []*phpjson.Object {
	var out []*phpjson.Object
	if branches := get(step, "branches"); isArray(branches) {
		for _, b := range phpValues(branches) {
			if nb := normalizeBranch(b); nb != nil {
				out = append(out, nb)
			}
		}
		return out
	}
	for _, h := range phpValues(get(step, "handlers")) {
		if s, ok := h.AsString(); ok && phpTrim(s) != "" {
			out = append(out, phpjson.NewObject().Set("class", phpjson.String(phpTrim(s))))
		}
	}
	return out
}

func normalizeBranch(b phpjson.Value) *phpjson.Object {
	if s, ok := b.AsString(); ok {
		if phpTrim(s) == "" {
			return nil
		}
		return phpjson.NewObject().Set("class", phpjson.String(phpTrim(s)))
	}
	if !isArray(b) {
		return nil
	}
	// Only string keys survive; PHP turns "0", "1", ... into int keys.
	out := phpjson.NewObject()
	for k, v := range phpArray(b).All() {
		if !isPHPIntKey(k) {
			out.Set(k, v)
		}
	}
	handler := BranchHandler(out)
	if handler == "" {
		return nil
	}
	return out.Set("class", phpjson.String(handler))
}

// BranchHandler is the handler of a branch: its "class", else "handler".
func BranchHandler(branch *phpjson.Object) string {
	h, _ := stringValue(coalesce(get(branch, "class"), get(branch, "handler")))
	return h
}

// MergeParallelBranch returns the definition one branch job is dispatched
// with: the step's keys (minus branches, handlers and type) overridden by
// the branch's, with config, retry, resources and payload merged one level
// deep.
func MergeParallelBranch(step, branch *phpjson.Object) *phpjson.Object {
	parent := cloneObject(step)
	parent.Delete("branches")
	parent.Delete("handlers")
	parent.Delete("type")
	merged := arrayReplace(parent, branch)
	for _, key := range []string{"config", "retry", "resources", "payload"} {
		pv, bv := get(parent, key), get(branch, key)
		if !isArray(pv) && !isArray(bv) {
			continue
		}
		merged.Set(key, phpjson.ObjectValue(arrayReplace(arrayOrEmpty(pv), arrayOrEmpty(bv))))
	}
	return merged
}

func arrayOrEmpty(v phpjson.Value) *phpjson.Object {
	if !isArray(v) {
		return phpjson.NewObject()
	}
	return phpArray(v)
}
