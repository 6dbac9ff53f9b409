package workflow

import (
	"errors"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StepLocalActivity is the step type of a local activity (seed 002,
// durable-workflow's localActivity): the worker that advanced the
// workflow runs the class in its own process right after the previous
// step committed, under the lease of the step job it already holds. The
// plugin's runtime does not know the type and would run it as a single
// step of the same class (docs/compat.md).
const StepLocalActivity StepType = "local_activity"

// LocalActivityKey is the step key holding the options snapshot.
const LocalActivityKey = "local_activity"

// ErrLocalActivityRouting is durable-workflow's InvalidArgumentException
// for routing options on a local activity, with its exact message.
var ErrLocalActivityRouting = errors.New("Local activities do not accept connection, queue, worker session, or schedule-to-start routing options.") //nolint:staticcheck // the spec's message

// RejectedLocalActivityOptions are the routing options a local activity
// refuses (the manifest's routing.rejected_options).
var RejectedLocalActivityOptions = []string{"connection", "queue", "worker_session", "schedule_to_start_timeout"}

// MaxLocalActivityAttempts caps max_attempts: every attempt after the
// first is a claim of the same step job, whose attempts column is a
// TINYINT (255) and which a cold replay may claim once more per attempt.
const MaxLocalActivityAttempts = 100

// DefaultLocalActivityBackoff is durable-workflow's default retry backoff
// (seconds) when neither the options nor the class give one.
var DefaultLocalActivityBackoff = []int64{1, 2, 5, 10, 15, 30, 60, 120}

// LocalActivityOptions are durable-workflow's LocalActivityOptions. Zero
// values mean "not set": MaxAttempts falls back to the handler's
// registered attempts, then 1; Backoff to DefaultLocalActivityBackoff;
// unset timeouts do not apply. Times are whole seconds.
//
// Queue, Connection, WorkerSession and ScheduleToStartTimeout are the
// routing options of an ordinary activity (ActivityOptions). A local
// activity never goes through the queue, so setting any of them is an
// error (ErrLocalActivityRouting), as in durable-workflow.
type LocalActivityOptions struct {
	MaxAttempts            int64
	Backoff                []int64
	StartToCloseTimeout    int64
	ScheduleToCloseTimeout int64
	HeartbeatTimeout       int64
	NonRetryableErrorTypes []string

	Queue                  string
	Connection             string
	WorkerSession          string
	ScheduleToStartTimeout int64
}

// validate applies the schema's ranges (max_attempts ≥ 1, timeouts ≥ 1,
// backoff entries ≥ 0, unique non-empty error types) and the routing
// rejection.
func (o LocalActivityOptions) validate() error {
	if o.Queue != "" || o.Connection != "" || o.WorkerSession != "" || o.ScheduleToStartTimeout != 0 {
		return ErrLocalActivityRouting
	}
	if o.MaxAttempts < 0 || o.MaxAttempts > MaxLocalActivityAttempts {
		return fmt.Errorf("local activity max_attempts must be between 1 and %d, got %d", MaxLocalActivityAttempts, o.MaxAttempts)
	}
	for name, v := range map[string]int64{"start_to_close_timeout": o.StartToCloseTimeout,
		"schedule_to_close_timeout": o.ScheduleToCloseTimeout, "heartbeat_timeout": o.HeartbeatTimeout} {
		if v < 0 {
			return fmt.Errorf("local activity %s must be a positive number of seconds, got %d", name, v)
		}
	}
	for i, b := range o.Backoff {
		if b < 0 {
			return fmt.Errorf("local activity backoff entry %d must not be negative, got %d", i, b)
		}
	}
	seen := map[string]bool{}
	for i, t := range o.NonRetryableErrorTypes {
		if phpjson.Trim(t) == "" {
			return fmt.Errorf("local activity non_retryable_error_types entry %d must be a non-empty string", i)
		}
		if seen[t] {
			return fmt.Errorf("local activity non_retryable_error_types lists %q twice", t)
		}
		seen[t] = true
	}
	return nil
}

// snapshot is the options snapshot stored in the step definition and in
// activity_executions.activity_options (spec §3.1): the markers, then
// every option (null when unset), never a routing key.
func (o LocalActivityOptions) snapshot() *phpjson.Object {
	pos := func(n int64) phpjson.Value {
		if n <= 0 {
			return phpjson.Null()
		}
		return phpjson.Int(n)
	}
	backoff := phpjson.Null()
	if o.Backoff != nil {
		vals := make([]phpjson.Value, len(o.Backoff))
		for i, b := range o.Backoff {
			vals[i] = phpjson.Int(b)
		}
		backoff = phpjson.List(vals...)
	}
	types := make([]phpjson.Value, len(o.NonRetryableErrorTypes))
	for i, t := range o.NonRetryableErrorTypes {
		types[i] = phpjson.String(t)
	}
	return phpjson.NewObject().
		Set("execution_mode", phpjson.String("local")).
		Set("queue_bypassed", phpjson.Bool(true)).
		Set("routing", phpjson.String("same_process_workflow_task")).
		Set("max_attempts", pos(o.MaxAttempts)).
		Set("backoff", backoff).
		Set("start_to_close_timeout", pos(o.StartToCloseTimeout)).
		Set("schedule_to_close_timeout", pos(o.ScheduleToCloseTimeout)).
		Set("heartbeat_timeout", pos(o.HeartbeatTimeout)).
		Set("non_retryable_error_types", phpjson.List(types...))
}

// LocalPolicy is a local activity step's options as the engine applies
// them.
type LocalPolicy struct {
	Class       string
	Snapshot    *phpjson.Object // as stored in the step
	MaxAttempts int64
	Backoff     []int64
	// Timeouts in seconds, 0 = unset.
	StartToClose, ScheduleToClose, Heartbeat int64
	NonRetryable                             []string
}

// ParseLocalPolicy reads a local_activity step definition the way the engine
// applies it, rejecting routing options wherever a PHP or hand-written
// definition put them (on the step or inside the snapshot) and values
// outside the schema's ranges. meta supplies the class's registered
// attempts when the options give none.
func ParseLocalPolicy(step Step, meta HandlerMetadataSource) (*LocalPolicy, error) {
	for _, k := range RejectedLocalActivityOptions {
		if v, ok := step.Get(k); ok && !v.IsNull() {
			return nil, ErrLocalActivityRouting
		}
	}
	if v, ok := step.Get("workerSession"); ok && !v.IsNull() {
		return nil, ErrLocalActivityRouting
	}
	p := &LocalPolicy{Class: step.Class()}
	if p.Class == "" {
		return nil, errors.New("local activity step has no class")
	}
	raw := step.field(LocalActivityKey)
	snap := phpjson.NewObject()
	if phpjson.IsArray(raw) {
		snap = phpjson.AsArray(raw)
	}
	for _, k := range append([]string{"workerSession", "scheduleToStartTimeout"}, RejectedLocalActivityOptions...) {
		if v, ok := snap.Get(k); ok && !v.IsNull() {
			return nil, ErrLocalActivityRouting
		}
	}
	p.Snapshot = snap
	var o LocalActivityOptions
	intOpt := func(key string) (int64, error) {
		v := phpjson.Get(snap, key)
		if v.IsNull() {
			return 0, nil
		}
		n, ok := v.AsInt64()
		if !ok || n < 1 {
			return 0, fmt.Errorf("local activity %s must be a positive integer, got %s", key, string(mustEncode(v)))
		}
		return n, nil
	}
	var err error
	if o.MaxAttempts, err = intOpt("max_attempts"); err != nil {
		return nil, err
	}
	if o.StartToCloseTimeout, err = intOpt("start_to_close_timeout"); err != nil {
		return nil, err
	}
	if o.ScheduleToCloseTimeout, err = intOpt("schedule_to_close_timeout"); err != nil {
		return nil, err
	}
	if o.HeartbeatTimeout, err = intOpt("heartbeat_timeout"); err != nil {
		return nil, err
	}
	switch b := phpjson.Get(snap, "backoff"); {
	case b.IsNull():
	case b.IsInt():
		n, _ := b.AsInt64()
		o.Backoff = []int64{n}
	case phpjson.IsArray(b):
		o.Backoff = []int64{}
		for _, e := range phpjson.Values(b) {
			n, ok := e.AsInt64()
			if !ok {
				return nil, fmt.Errorf("local activity backoff entries must be integers, got %s", string(mustEncode(e)))
			}
			o.Backoff = append(o.Backoff, n)
		}
	default:
		return nil, fmt.Errorf("local activity backoff must be an integer or a list of integers, got %s", string(mustEncode(b)))
	}
	for _, t := range phpjson.Values(phpjson.Get(snap, "non_retryable_error_types")) {
		s, ok := t.AsString()
		if !ok {
			return nil, errors.New("local activity non_retryable_error_types must be strings")
		}
		o.NonRetryableErrorTypes = append(o.NonRetryableErrorTypes, s)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	p.MaxAttempts = o.MaxAttempts
	if p.MaxAttempts == 0 {
		p.MaxAttempts = min(max(1, metadataFor(meta, p.Class).MaxAttempts), MaxLocalActivityAttempts)
	}
	p.Backoff = o.Backoff
	if p.Backoff == nil {
		p.Backoff = DefaultLocalActivityBackoff
	}
	p.StartToClose, p.ScheduleToClose, p.Heartbeat = o.StartToCloseTimeout, o.ScheduleToCloseTimeout, o.HeartbeatTimeout
	p.NonRetryable = o.NonRetryableErrorTypes
	return p, nil
}

func mustEncode(v phpjson.Value) []byte {
	b, err := phpjson.Encode(v)
	if err != nil {
		return []byte(v.Kind().String())
	}
	return b
}

// CheckLocalActivities rejects a dispatch whose definition has a
// local_activity step with routing options or invalid values (the
// dispatch-time check; the builder checks at build time).
func CheckLocalActivities(d *Dispatch) error {
	if d == nil {
		return nil
	}
	st, err := ParseState(d.Workflow.State)
	if err != nil {
		return err
	}
	for i, s := range st.Steps() {
		if s.Type() != StepLocalActivity {
			continue
		}
		if _, err := ParseLocalPolicy(s, nil); err != nil {
			return fmt.Errorf("workflow %q step %d (%s): %w", d.Workflow.Name, i, s.Name(i), err)
		}
	}
	return nil
}

// localJobMaxAttempts is the step job's own max_attempts (column and
// __queuety_runtime): the most a TINYINT holds, so that neither our stale
// sweep nor PHP's buries the job of a local activity before the
// execution's max_attempts (at most MaxLocalActivityAttempts) decide.
const localJobMaxAttempts = 255

// localStepJobs is the one job row of a local activity step: the durable
// workflow task its attempts run under. It goes on the run's queue with
// its priority (a local activity takes no routing of its own).
func localStepJobs(step Step, index int, defaults DispatchDefaults) ([]StepJob, error) {
	payload := stepPayload(step.Object())
	payload.Set(RuntimePayloadKey, phpjson.ObjectValue(phpjson.NewObject().Set("max_attempts", phpjson.Int(localJobMaxAttempts))))
	b, err := phpjson.Encode(phpjson.ObjectValue(payload))
	if err != nil {
		return nil, fmt.Errorf("workflow: encoding the payload of local activity step %d: %w", index, err)
	}
	return []StepJob{{
		Handler: step.Class(), Payload: b, Queue: defaults.Queue, Priority: defaults.Priority,
		MaxAttempts: localJobMaxAttempts, StepIndex: index, CostUnits: 1,
	}}, nil
}

// LocalActivityStep runs its class as a local activity (builder:
// LocalActivity).
type LocalActivityStep struct {
	StepCommon
	Class string
	// Options is the options snapshot as stored (execution_mode,
	// queue_bypassed, routing, max_attempts, backoff, the timeouts,
	// non_retryable_error_types).
	Options *phpjson.Object
}

// Type implements StepDefinition.
func (*LocalActivityStep) Type() StepType { return StepLocalActivity }

func (s Step) localActivityDef(c StepCommon) (*LocalActivityStep, error) {
	p, err := ParseLocalPolicy(s, nil)
	if err != nil {
		return nil, fmt.Errorf("workflow: local activity step %q: %w", c.Name, err)
	}
	return &LocalActivityStep{StepCommon: c, Class: p.Class, Options: p.Snapshot}, nil
}
