package queuety

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// ChainCatch is a Go implementation of a chain's catch class, registered
// under the class name a chain's jobs carry in "__chain_catch". It is
// called once the chain's job is buried, with the job and its error.
type ChainCatch func(ctx context.Context, job *Job, err error) error

// RegisterChainCatch registers fn as the chain catch class name. Without
// a PHP pool a worker claims a chain's jobs only when their catch class
// is registered here.
func (r *Registry) RegisterChainCatch(name string, fn ChainCatch) {
	if name == "" || fn == nil {
		panic("queuety: RegisterChainCatch needs a class name and a function")
	}
	r.machines.mu.Lock()
	defer r.machines.mu.Unlock()
	if r.machines.catches == nil {
		r.machines.catches = map[string]ChainCatch{}
	}
	if _, dup := r.machines.catches[name]; dup {
		panic(fmt.Sprintf("queuety: chain catch %q registered twice", name))
	}
	r.machines.catches[name] = fn
}

func (r *Registry) chainCatchNames() []string {
	r.machines.mu.RLock()
	defer r.machines.mu.RUnlock()
	return sortedKeys(r.machines.catches)
}

// callChainCatch is Worker::call_chain_catch: the class named by the
// payload's "__chain_catch" gets handle(), handle($job) or handle($job,
// $e) by its arity. A failure is only logged (best effort, as in PHP).
// It runs after the burial was written, so it keeps ctx's values but not
// its end: a forced stop does not cut a catch that already began.
func (r *recorder) callChainCatch(ctx context.Context, rj *running, cause error) {
	class := chainCatchClass(rj.row.Payload)
	if class == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	r.Reg.machines.mu.RLock()
	fn, ok := r.Reg.machines.catches[class]
	r.Reg.machines.mu.RUnlock()
	if ok {
		if err := callChainCatchFunc(ctx, fn, rj.job, cause); err != nil {
			r.Log.Warn("chain catch failed", "job", rj.row.ID, "class", class, "err", err)
		}
		return
	}
	caller := r.Reg.classCaller()
	if caller == nil {
		r.Log.Warn("chain catch skipped: no Go catch of this name and no PHP pool", "job", rj.row.ID, "class", class)
		return
	}
	args, err := r.chainCatchArgs(ctx, rj, cause)
	if err == nil {
		_, err = caller.CallClass(ctx, ClassCall{Class: class, Method: "handle", Args: args, FitArity: true, Optional: true})
	}
	if err != nil {
		r.Log.Warn("chain catch failed", "job", rj.row.ID, "class", class, "err", err)
	}
}

func callChainCatchFunc(ctx context.Context, fn ChainCatch, job *Job, cause error) (err error) {
	defer throwable.Catch(&err)
	return fn(ctx, job, cause)
}

// chainCatchClass is the payload's "__chain_catch" string, or "".
func chainCatchClass(payload string) string {
	v, err := phpjson.DecodeString(payload)
	if err != nil {
		return ""
	}
	o, ok := v.AsObject()
	if !ok {
		return ""
	}
	c, _ := o.Get(chainCatchKey)
	s, _ := c.AsString()
	return s
}

// chainCatchArgs are the catch's ($job, $e): the job as the worker
// claimed it (processing, this attempt) and the failure.
func (r *recorder) chainCatchArgs(ctx context.Context, rj *running, cause error) ([]byte, error) {
	row := rj.row
	if full, err := r.Store.GetJob(ctx, row.ID); err == nil {
		row = *full
	}
	jr := phpjson.NewObject().
		Set("id", phpjson.Int(row.ID)).
		Set("queue", phpjson.String(row.Queue)).
		Set("handler", phpjson.String(row.Handler)).
		Set("payload", phpjson.String(row.Payload)).
		Set("payload_hash", nullString(row.PayloadHash.String, row.PayloadHash.Valid)).
		Set("priority", phpjson.Int(int64(row.Priority))).
		Set("status", phpjson.String(store.StatusProcessing)).
		Set("attempts", phpjson.Int(int64(rj.row.Attempts))).
		Set("max_attempts", phpjson.Int(int64(row.MaxAttempts))).
		Set("available_at", phpjson.String(store.DateTime(row.AvailableAt))).
		Set("reserved_at", nullTime(row.ReservedAt.Time, row.ReservedAt.Valid)).
		Set("completed_at", phpjson.Null()).
		Set("failed_at", phpjson.Null()).
		Set("error_message", phpjson.Null()).
		Set("workflow_id", nullInt(row.WorkflowID.Int64, row.WorkflowID.Valid)).
		Set("step_index", nullInt(row.StepIndex.Int64, row.StepIndex.Valid)).
		Set("depends_on", nullInt(row.DependsOn.Int64, row.DependsOn.Valid)).
		Set("batch_id", nullInt(row.BatchID.Int64, row.BatchID.Valid)).
		Set("heartbeat_data", nullString(row.HeartbeatData.String, row.HeartbeatData.Valid)).
		Set("concurrency_group", nullString(row.ConcurrencyGroup.String, row.ConcurrencyGroup.Valid)).
		Set("concurrency_limit", nullInt(row.ConcurrencyLimit.Int64, row.ConcurrencyLimit.Valid)).
		Set("cost_units", phpjson.Int(row.CostUnits)).
		Set("created_at", phpjson.String(store.DateTime(row.CreatedAt)))
	job := phpjson.NewObject().Set("__queuety_arg", phpjson.String("job")).Set("row", phpjson.ObjectValue(jr))
	e := phpjson.NewObject().Set("__queuety_arg", phpjson.String("throwable")).
		Set("class", phpjson.String(errorClass(cause))).Set("message", phpjson.String(cause.Error()))
	return phpjson.Encode(phpjson.List(phpjson.ObjectValue(job), phpjson.ObjectValue(e)))
}

func nullInt(n int64, valid bool) phpjson.Value {
	if !valid {
		return phpjson.Null()
	}
	return phpjson.Int(n)
}

// machineFuncs are a Registry's Go state actions, guards and chain
// catches, by PHP class name.
type machineFuncs struct {
	mu      sync.RWMutex
	actions map[string]machine.Action
	guards  map[string]machine.Guard
	catches map[string]ChainCatch
}
