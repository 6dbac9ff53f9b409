package queuety

import (
	"fmt"
	"math"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Backoff strategies (Queuety's BackoffStrategy enum).
const (
	BackoffFixed       = "fixed"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"
)

// Backoff is Queuety's retry delay rule: a named strategy, or a list of
// delays in seconds indexed by attempt (the last entry repeats).
type Backoff struct {
	Strategy string
	List     []int
}

// Delay is the wait before the next attempt after attempt (1-based, the
// post-claim count) failed: Queue::calculate_backoff, or the list entry
// list[max(0, min(attempt-1, len-1))] (an empty list means no wait).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.List != nil {
		if len(b.List) == 0 {
			return 0
		}
		i := max(0, min(attempt-1, len(b.List)-1))
		return seconds(int64(b.List[i]))
	}
	switch b.Strategy {
	case BackoffFixed:
		return 60 * time.Second
	case BackoffLinear:
		return time.Duration(attempt) * 60 * time.Second
	default: // exponential; PHP maps an unknown strategy to it too
		s := math.Min(math.Pow(2, float64(attempt))*30, 3600)
		return time.Duration(s) * time.Second
	}
}

// maxSeconds caps a delay or time limit read from a row or a flag: ten
// years is "never" for a job, and a larger count of seconds would overflow
// time.Duration into a negative wait.
const maxSeconds = 10 * 365 * 24 * 3600

// seconds is n seconds, at least 0 and at most maxSeconds.
func seconds(n int64) time.Duration {
	return time.Duration(min(max(n, 0), maxSeconds)) * time.Second
}

// value is b as __queuety_runtime.backoff holds it: the strategy name or
// the list of delays.
func (b Backoff) value() phpjson.Value {
	if b.List != nil {
		vs := make([]phpjson.Value, len(b.List))
		for i, d := range b.List {
			vs[i] = phpjson.Int(int64(d))
		}
		return phpjson.List(vs...)
	}
	return phpjson.String(b.Strategy)
}

func (b Backoff) validate() error {
	if b.List != nil {
		for _, d := range b.List {
			if d < 0 {
				return fmt.Errorf("delay %d in list: must not be negative", d)
			}
		}
		return nil
	}
	switch b.Strategy {
	case BackoffFixed, BackoffLinear, BackoffExponential:
		return nil
	}
	return fmt.Errorf("unknown strategy %q (want fixed, linear or exponential)", b.Strategy)
}

// ParseBackoff reads a --backoff flag: a strategy name or comma-separated
// seconds ("10,30,60").
func ParseBackoff(s string) (Backoff, error) {
	switch s {
	case BackoffFixed, BackoffLinear, BackoffExponential:
		return Backoff{Strategy: s}, nil
	}
	var list []int
	for _, part := range SplitQueues(s) {
		var n int
		if _, err := fmt.Sscanf(part, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != part {
			return Backoff{}, fmt.Errorf("backoff %q: want fixed, linear, exponential or a list of seconds like 10,30,60", s)
		}
		list = append(list, n)
	}
	if list == nil {
		return Backoff{}, fmt.Errorf("backoff %q: empty", s)
	}
	return Backoff{List: list}, nil
}

// Reserved payload keys Queuety strips before a handler sees the payload.
const (
	runtimeKey    = "__queuety_runtime"
	chainCatchKey = "__chain_catch"
)

// runtimeOptions is the payload's __queuety_runtime object (spec §2.4):
// per-job overrides that beat handler options and defaults.
type runtimeOptions struct {
	MaxAttempts int
	Timeout     time.Duration
	Backoff     *Backoff
}

// parseRuntime reads __queuety_runtime leniently, as PHP does: fields of the
// wrong type are ignored, not errors.
func parseRuntime(payload phpjson.Value) runtimeOptions {
	var r runtimeOptions
	obj, ok := payload.AsObject()
	if !ok {
		return r
	}
	rtv, ok := obj.Get(runtimeKey)
	if !ok {
		return r
	}
	rt, ok := rtv.AsObject()
	if !ok {
		return r
	}
	if v, ok := rt.Get("max_attempts"); ok && v.IsInt() {
		if n, _ := v.AsInt64(); n > 0 {
			r.MaxAttempts = int(min(n, 255))
		}
	}
	if v, ok := rt.Get("timeout_seconds"); ok && v.IsInt() {
		if n, _ := v.AsInt64(); n > 0 {
			r.Timeout = seconds(n)
		}
	}
	if v, ok := rt.Get("backoff"); ok {
		r.Backoff = backoffOf(v)
	}
	return r
}

// backoffOf reads a backoff as __queuety_runtime or a class's config()
// holds it: a strategy name or a list of delays; nil for other shapes.
func backoffOf(v phpjson.Value) *Backoff {
	if s, ok := v.AsString(); ok {
		// BackoffStrategy::tryFrom: an unknown name means the default.
		b := Backoff{Strategy: s}
		if b.validate() != nil {
			b.Strategy = BackoffExponential
		}
		return &b
	}
	if list, ok := v.AsList(); ok {
		b := Backoff{List: make([]int, 0, len(list))}
		for _, e := range list {
			b.List = append(b.List, int(phpjson.ToInt(e)))
		}
		return &b
	}
	// Other shapes (objects with string keys) are ignored; Queuety
	// indexes them by position and ends with a zero delay.
	return nil
}
