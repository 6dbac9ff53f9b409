package queuety

import (
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
