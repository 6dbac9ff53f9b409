package queuety

import (
	"context"
	"errors"
	"fmt"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// failure builds the write for a failed attempt as retryOrBury decides it
// with the settings the executor ran it under (policy.go). Log rows are
// Queuety's: `failed, retried` or `buried`.
func failure(rj *running, o *outcome) store.Failure {
	row, err := &rj.row, o.err
	bury, delay := o.settings.retryOrBury(row.Attempts, err)
	base := store.LogFor(row, store.EventFailed)
	base.Attempt = store.Int(int64(row.Attempts))
	base.DurationMS = store.Int(o.duration.Milliseconds())
	base.ErrorMessage = store.String(err.Error())
	base.ErrorClass = store.String(errorClass(err))
	base.ErrorTrace = store.String(errorTrace(err))
	return failureWrite(row, rj.job.attempt, bury, delay, base)
}

// fail records a failed attempt. A failure the server refuses to store (a
// value it will not take although FitText cut it, a trigger, a column
// changed by hand) buries the job with a message saying so, so the attempt
// is never left processing and retried by the stale sweep under a message
// that hides the cause.
//
// ctx is the attempt's: what runs after a burial (afterBury) keeps its
// values, not its end.
func (r *recorder) fail(ctx context.Context, rj *running, o *outcome) {
	defer rj.batchTurn.finish() // whatever path is taken below
	f := failure(rj, o)
	applied, cb, err := r.writeJobFailure(ctx, rj, f)
	if err != nil && !retryableWrite(err) {
		r.Log.Error("the server refused this job's failure; burying it", "job", rj.row.ID, "err", err)
		f = refusedWrite(&rj.row, rj.job.attempt, o.duration, "its failure", err, o.err.Error())
		o = &outcome{err: errors.New(f.ErrorMessage), duration: o.duration}
		applied, cb, err = r.writeJobFailure(ctx, rj, f)
	}
	if err != nil {
		r.Log.Error("writing the job's failure failed; the stale sweep will recover the job", "job", rj.row.ID, "err", err)
		return
	}
	if !applied {
		r.Stats.refused.Add(1)
		r.Log.Warn("failure refused: the attempt no longer holds the row", "job", rj.row.ID)
		return
	}
	r.countOutcome(rj, o, f)
	r.notifyFailure(rj, o, f.Bury)
	if f.Bury {
		r.afterBury(ctx, rj, o.err, cb) // chain catch, fail_action, batch callbacks (chain_catch.go)
	}
}

// writeFailure writes a failed attempt's retry or burial.
func (s *stateWriter) writeFailure(ctx context.Context, f store.Failure) (applied bool, err error) {
	err = s.persist(ctx, "fail", func(ctx context.Context) error {
		var err error
		applied, err = s.store.FailJob(ctx, f)
		return err
	})
	return applied, err
}

// refusedWrite is the burial of an attempt whose outcome (what) the server
// refused to store: a short message with the server's reason and the
// start of the original error, and a `buried` log row without a trace.
func refusedWrite(row *store.JobRow, at store.Attempt, d time.Duration, what string, serverErr error, original string) store.Failure {
	msg := fmt.Sprintf("queuety-go could not record %s: %s", what, store.FitChars(serverErr.Error(), 500))
	if original != "" {
		msg += "; the error was: " + store.FitChars(original, 1000)
	}
	buried := store.LogFor(row, store.EventBuried)
	buried.Attempt = store.Int(int64(row.Attempts))
	buried.DurationMS = store.Int(d.Milliseconds())
	buried.ErrorMessage = store.String(msg)
	buried.ErrorClass = store.String("QueuetyGo\\WriteRefused")
	return store.Failure{Attempt: at, Bury: true, ErrorMessage: msg, Logs: []store.LogRow{buried}}
}
