package queuety

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Priority is Queuety's Priority enum; higher is claimed first. It is the
// workflow package's type, so a job and a workflow step share one.
type Priority = workflow.Priority

// Priorities.
const (
	PriorityLow    = workflow.PriorityLow
	PriorityNormal = workflow.PriorityNormal
	PriorityHigh   = workflow.PriorityHigh
	PriorityUrgent = workflow.PriorityUrgent
)

// ParsePriority reads a --priority flag: 0-3, or a name as step
// definitions spell it (workflow.ParsePriority).
func ParsePriority(s string) (Priority, error) {
	if len(s) == 1 && s[0] >= '0' && s[0] <= '3' {
		return Priority(s[0] - '0'), nil
	}
	if p, ok := workflow.ParsePriority(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("priority %q: want 0-3 or low, normal, high, urgent", s)
}

// Job is one claimed attempt, as a handler sees it.
type Job struct {
	ID       int64
	Queue    string
	Handler  string
	Priority Priority
	// Attempt is this attempt's number, 1-based (jobs.attempts after claim).
	Attempt     int
	MaxAttempts int
	// Payload is the decoded payload without Queuety's reserved keys
	// (__queuety_runtime, __chain_catch). Do not mutate it.
	Payload phpjson.Value
	// RawPayload is the payload column exactly as stored.
	RawPayload []byte

	attempt store.Attempt
	beat    *jobBeat // nil outside a worker
	run     *running
}

// jobBeat is what Job.Heartbeat writes through: the store, and the session
// agent that renews a session-bound job's lease first. A worker has one.
type jobBeat struct {
	store    *store.Store
	sessions *sessionAgent
}

// Decode unmarshals the payload (reserved keys removed) into v with
// encoding/json.
func (j *Job) Decode(v any) error {
	if j.Payload.IsEmptyArray() && !wantsList(v) {
		// PHP writes an empty payload (no arguments, or only reserved keys)
		// as `[]`, a list to encoding/json; for PHP it is an empty array,
		// which is also an empty object.
		return decodeJSON([]byte("{}"), v)
	}
	b, err := phpjson.Encode(j.Payload)
	if err != nil {
		return err
	}
	return decodeJSON(b, v)
}

// wantsList reports whether v points at a slice, an array or an interface
// (which takes `[]` as it is).
func wantsList(v any) bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return true // let encoding/json report it
	}
	switch t.Elem().Kind() {
	case reflect.Slice, reflect.Array, reflect.Interface:
		return true
	}
	return false
}

// ErrJobLost is the cause of a job context cancelled because the attempt no
// longer holds its row: it was rescued as stale, deleted, or re-claimed.
// The handler should stop; its result will be refused.
var ErrJobLost = errors.New("queuety: the job's row is no longer held by this attempt")

// ErrShutdown is the cause of a job context cancelled because the worker's
// shutdown grace ran out; the attempt is handed back to pending.
var ErrShutdown = errors.New("queuety: worker shutting down")

// ReportMemoryPeak records the peak memory, in KiB, of the process that
// ran the job, for its completed log row's memory_peak_kb: the PHP pool
// reports its PHP process's memory_get_peak_usage(true), the figure the
// plugin's worker logs. Without a report the row gets the Go worker's.
func (j *Job) ReportMemoryPeak(kb int64) {
	if j.run != nil && kb > 0 {
		j.run.memPeakKB.Store(kb)
	}
}

// Heartbeat is Queuety's Heartbeat::beat: it refreshes reserved_at so no
// stale sweep (ours or PHP's) takes the job, and stores progress (any value
// JSON can encode, or nil) in heartbeat_data. It returns ErrJobLost, and
// cancels the job's context with it, when the attempt no longer holds the
// row. Long jobs are also heartbeated automatically; call this to record
// progress or to find out early that the job was lost.
func (j *Job) Heartbeat(ctx context.Context, progress any) error {
	if j.beat == nil {
		return nil // outside a worker (tests, dispatch_sync style runs)
	}
	var data []byte
	if progress != nil {
		v, err := toValue(progress)
		if err != nil {
			return fmt.Errorf("heartbeat progress: %w", err)
		}
		if data, err = phpjson.Encode(v); err != nil {
			return fmt.Errorf("heartbeat progress: %w", err)
		}
	}
	if j.run != nil && j.run.row.SessionID.Valid {
		// A job heartbeat renews its worker session's lease first, and is
		// recorded only when that succeeds; a refused renewal means stop
		// (the context is cancelled with the reason).
		if err := j.beat.sessions.renewFor(ctx, j.run); err != nil {
			return err
		}
	}
	ok, err := j.beat.store.Heartbeat(ctx, j.attempt, data)
	if err != nil {
		return err
	}
	if j.run != nil {
		j.run.touched(time.Now())
	}
	if !ok {
		if j.run != nil {
			j.run.cancel(ErrJobLost)
		}
		return ErrJobLost
	}
	return nil
}
