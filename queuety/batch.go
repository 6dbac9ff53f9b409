package queuety

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	store "github.com/queuety-go/queuety/sql"
)

// Batch is a batches row as a batch callback receives it (the plugin's
// Queuety\Batch), read again after the counters' commit.
type Batch struct {
	ID           int64          `json:"id"`
	Name         string         `json:"name,omitempty"`
	TotalJobs    int64          `json:"total_jobs"`
	PendingJobs  int64          `json:"pending_jobs"`
	FailedJobs   int64          `json:"failed_jobs"`
	FailedJobIDs []int64        `json:"failed_job_ids"`
	Options      map[string]any `json:"options"`
	CancelledAt  *time.Time     `json:"cancelled_at,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	FinishedAt   *time.Time     `json:"finished_at,omitempty"`
}

// Progress is Batch::progress: the percentage of jobs no longer pending.
func (b *Batch) Progress() int {
	if b.TotalJobs == 0 {
		return 100
	}
	return int((b.TotalJobs - b.PendingJobs) * 100 / b.TotalJobs)
}

// BatchCallback is a Go implementation of a batch's then, catch or
// finally class, registered under the class name the batch's options hold.
// Its error is logged and otherwise ignored, as the plugin ignores a
// callback's exception.
type BatchCallback func(ctx context.Context, b *Batch) error

// batchCallbacks are a Registry's Go batch callbacks.
type batchCallbacks struct {
	mu sync.RWMutex
	m  map[string]BatchCallback
}

// RegisterBatchCallback registers fn as the batch callback class name
// (the value of then/catch/finally in a batch's options). A worker claims
// a batch's jobs without a PHP pool only when each of the batch's
// callbacks is registered here.
func (r *Registry) RegisterBatchCallback(name string, fn BatchCallback) {
	if name == "" || fn == nil {
		panic("queuety: RegisterBatchCallback needs a class name and a function")
	}
	r.batches.mu.Lock()
	defer r.batches.mu.Unlock()
	if r.batches.m == nil {
		r.batches.m = map[string]BatchCallback{}
	}
	if _, dup := r.batches.m[name]; dup {
		panic(fmt.Sprintf("queuety: batch callback %q registered twice", name))
	}
	r.batches.m[name] = fn
}

func (r *Registry) batchCallback(name string) (BatchCallback, bool) {
	r.batches.mu.RLock()
	defer r.batches.mu.RUnlock()
	fn, ok := r.batches.m[name]
	return fn, ok
}

// batchCallbackNames lists the Go batch callbacks, for the claim filter.
func (r *Registry) batchCallbackNames() []string {
	r.batches.mu.RLock()
	defer r.batches.mu.RUnlock()
	out := make([]string, 0, len(r.batches.m))
	for n := range r.batches.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// completeBatchJob writes a batch job's completion with its batch's
// counters in one transaction (not through the completer's group commit,
// which is for jobs whose completion touches nothing else), then fires
// the callbacks it finished.
func (r *recorder) completeBatchJob(ctx context.Context, rj *running, d time.Duration) {
	defer rj.batchTurn.finish() // whatever path is taken below
	c := store.Completion{Attempt: rj.job.attempt, Log: r.completedLog(rj, d)}
	var applied, already bool
	cb, turn, err := r.batchTurns.write(rj.row.BatchID.Int64, func() (cb store.BatchCallbacks, err error) {
		err = r.Writes.persist(ctx, "complete", func(ctx context.Context) error {
			var err error
			applied, already, cb, err = r.Store.CompleteBatchJob(ctx, c, rj.row.BatchID.Int64)
			return err
		})
		return cb, err
	})
	rj.batchTurn = turn
	switch {
	case err != nil && retryableWrite(err):
		r.Log.Error("writing the batch job's completion failed; the stale sweep will recover the job", "job", rj.row.ID, "err", err)
		return
	case err != nil:
		// Not the connection: the server refused a row. Its burial is
		// counted as the batch's failure, so the batch still finishes.
		r.Log.Error("the server refused this batch job's completion; burying it", "job", rj.row.ID, "err", err)
		f := refusedWrite(&rj.row, rj.job.attempt, d, "its completion", err, "")
		if _, cb, err := r.writeJobFailure(ctx, rj, f); err != nil {
			r.Log.Error("burying it failed too; the stale sweep will recover the job", "job", rj.row.ID, "err", err)
		} else {
			r.Stats.buried.Add(1)
			r.fireBatchCallbacks(ctx, rj, cb)
		}
		return
	case !applied && !already:
		r.Stats.refused.Add(1)
		r.Log.Warn("completion refused: the attempt no longer holds the row (rescued or deleted)", "job", rj.row.ID)
		return
	}
	r.Stats.completed.Add(1)
	// job.completed as for a plain job: the plugin sends it for a batch job
	// too, before it records the batch's completion (Worker::process_job).
	r.notifyCompleted([]store.Completion{c}, store.CompleteResult{Completed: []int64{rj.row.ID}})
	if cb.Any() {
		r.rowWritten(rj)
		r.fireBatchCallbacks(ctx, rj, cb)
	}
}

// rowWritten takes a job whose final write committed off the heartbeats
// while its slot still runs what follows the write (callbacks), so the
// heartbeater does not report the finished row as lost.
func (r *recorder) rowWritten(rj *running) {
	r.Jobs.remove(rj.row.ID)
}

// writeJobFailure is writeFailure, with a batch job's burial counted in
// its batch in the same transaction.
func (r *recorder) writeJobFailure(ctx context.Context, rj *running, f store.Failure) (applied bool, cb store.BatchCallbacks, err error) {
	if !rj.row.BatchID.Valid {
		applied, err = r.Writes.writeFailure(ctx, f)
		return applied, cb, err
	}
	rj.batchTurn.finish() // a write refused before this one fired nothing
	cb, rj.batchTurn, err = r.batchTurns.write(rj.row.BatchID.Int64, func() (cb store.BatchCallbacks, err error) {
		err = r.Writes.persist(ctx, "fail", func(ctx context.Context) error {
			var err error
			applied, cb, err = r.Store.FailBatchJob(ctx, f, rj.row.BatchID.Int64)
			return err
		})
		return cb, err
	})
	return applied, cb, err
}

// fireBatchCallbacks runs a batch's callbacks after the commit that
// finished them, in BatchManager's order: catch, then, finally, each with
// the batch read again (fire_callback's find()), and after the callbacks
// of this process's earlier commits of the batch (batch_order.go).
func (r *recorder) fireBatchCallbacks(ctx context.Context, rj *running, cb store.BatchCallbacks) {
	turn := rj.batchTurn
	rj.batchTurn = nil
	defer turn.finish()
	turn.wait()
	for _, t := range []struct {
		on   bool
		name string
	}{{cb.Catch, "catch"}, {cb.Then, "then"}, {cb.Finally, "finally"}} {
		if t.on {
			fireBatchCallback(ctx, r.Store, r.Reg, r.Log, cb.BatchID, t.name)
		}
	}
}

// batchLogger is what fireBatchCallback logs to.
type batchLogger interface {
	Warn(msg string, args ...any)
}

// fireBatchCallback is BatchManager::fire_callback: the class in the
// batch's options under kind, called with the batch as it is now; a
// missing batch, class or handle() method is skipped, and a failure is
// only logged.
func fireBatchCallback(ctx context.Context, st *store.Store, reg *Registry, log batchLogger, batchID int64, kind string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	row, err := st.GetBatch(ctx, batchID)
	if err != nil {
		if err != store.ErrBatchNotFound {
			log.Warn("batch callback skipped: reading the batch failed", "batch", batchID, "callback", kind, "err", err)
		}
		return
	}
	b := batchOf(row)
	class, _ := b.Options[kind].(string)
	if class == "" {
		return
	}
	if fn, ok := reg.batchCallback(class); ok {
		if err := callBatchCallback(ctx, fn, b); err != nil {
			log.Warn("batch callback failed", "batch", batchID, "callback", kind, "class", class, "err", err)
		}
		return
	}
	caller := reg.classCaller()
	if caller == nil {
		log.Warn("batch callback skipped: no Go callback of this name and no PHP pool", "batch", batchID, "callback", kind, "class", class)
		return
	}
	args, err := batchArgs(row)
	if err == nil {
		_, err = caller.CallClass(ctx, ClassCall{Class: class, Method: "handle", Args: args, Optional: true})
	}
	if err != nil {
		log.Warn("batch callback failed", "batch", batchID, "callback", kind, "class", class, "err", err)
	}
}

func callBatchCallback(ctx context.Context, fn BatchCallback, b *Batch) (err error) {
	defer throwable.Catch(&err)
	return fn(ctx, b)
}

// batchArgs is the argument list of a PHP callback: the batch row, which
// the pool builds into a Queuety\Batch.
func batchArgs(row store.BatchRow) ([]byte, error) {
	r := phpjson.NewObject().
		Set("id", phpjson.Int(row.ID)).
		Set("name", nullString(row.Name.String, row.Name.Valid)).
		Set("total_jobs", phpjson.Int(row.TotalJobs)).
		Set("pending_jobs", phpjson.Int(row.PendingJobs)).
		Set("failed_jobs", phpjson.Int(row.FailedJobs)).
		Set("failed_job_ids", phpjson.String(row.FailedJobIDs)).
		Set("options", phpjson.String(row.Options)).
		Set("cancelled_at", nullTime(row.CancelledAt.Time, row.CancelledAt.Valid)).
		Set("created_at", phpjson.String(store.DateTime(row.CreatedAt))).
		Set("finished_at", nullTime(row.FinishedAt.Time, row.FinishedAt.Valid))
	arg := phpjson.NewObject().Set("__queuety_arg", phpjson.String("batch")).Set("row", phpjson.ObjectValue(r))
	return phpjson.Encode(phpjson.List(phpjson.ObjectValue(arg)))
}

func batchOf(row store.BatchRow) *Batch {
	b := &Batch{ID: row.ID, Name: row.Name.String, TotalJobs: row.TotalJobs, PendingJobs: row.PendingJobs,
		FailedJobs: row.FailedJobs, CreatedAt: row.CreatedAt, FailedJobIDs: []int64{}, Options: map[string]any{}}
	if v, err := phpjson.DecodeString(row.FailedJobIDs); err == nil {
		if l, ok := v.AsList(); ok {
			for _, e := range l {
				if n, ok := e.AsInt64(); ok {
					b.FailedJobIDs = append(b.FailedJobIDs, n)
				}
			}
		}
	}
	if v, err := phpjson.DecodeString(row.Options); err == nil {
		if m, ok := v.ToGo().(map[string]any); ok {
			b.Options = m
		}
	}
	if row.CancelledAt.Valid {
		t := row.CancelledAt.Time
		b.CancelledAt = &t
	}
	if row.FinishedAt.Valid {
		t := row.FinishedAt.Time
		b.FinishedAt = &t
	}
	return b
}

func nullString(s string, valid bool) phpjson.Value {
	if !valid {
		return phpjson.Null()
	}
	return phpjson.String(s)
}

func nullTime(t time.Time, valid bool) phpjson.Value {
	if !valid {
		return phpjson.Null()
	}
	return phpjson.String(store.DateTime(t))
}

// CancelBatch is BatchManager::cancel: the batch is marked cancelled and
// finished and its finally callback fires (Go, or PHP through reg's pool);
// its remaining jobs still run, and its counters no longer move.
func (c *Client) CancelBatch(ctx context.Context, reg *Registry, id int64) error {
	ok, err := c.store.CancelBatch(ctx, id)
	if err != nil || !ok {
		return err
	}
	if reg == nil {
		reg = NewRegistry()
	}
	fireBatchCallback(ctx, c.store, reg, c.cfg.Logger, id, "finally")
	return nil
}
