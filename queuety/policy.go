package queuety

import (
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	store "github.com/queuety-go/queuety/sql"
)

// One retry-or-bury policy for every attempt that ends without success:
// a plain job's failure (failure.go), a workflow step's (execute.go,
// decideStep), a stale row's (Client.RecoverStale, jobs and steps) and an
// external worker's (Tasks.Fail). Queuety decides them all the same way
// (Worker::process_job's catch block and recover_stale): the attempt limit
// and backoff of the job (defaults, handler options, the payload's
// __queuety_runtime), and once the attempts reach the limit, burial.

func parsePayloadLenient(s string) phpjson.Value {
	v, err := phpjson.DecodeString(s)
	if err != nil {
		return phpjson.Null()
	}
	return v
}

// attemptSettings are the effective rules for one attempt: defaults, then
// the handler's options, then the payload's __queuety_runtime (spec §4.3).
type attemptSettings struct {
	maxAttempts int
	timeout     time.Duration
	backoff     Backoff
}

// attemptPolicy is what the settings of every attempt start from: the
// configured defaults and the registry's handler options and PHP class
// config. It needs nothing else of the Client.
type attemptPolicy struct {
	timeout time.Duration
	backoff Backoff
	reg     *Registry
}

func (c *Client) policy(reg *Registry) attemptPolicy {
	return attemptPolicy{timeout: c.cfg.JobTimeout, backoff: c.cfg.Backoff, reg: reg}
}

func (c *Client) settingsFor(reg *Registry, j *store.JobRow, payload phpjson.Value) attemptSettings {
	return c.policy(reg).settings(j, payload)
}

// settings are the settings of an attempt of j, its handler looked up.
func (p attemptPolicy) settings(j *store.JobRow, payload phpjson.Value) attemptSettings {
	h, _ := p.reg.lookup(j.Handler)
	return p.settingsWith(h, j, payload)
}

// settingsWith are the settings of an attempt of j run by h (the zero
// registered: no handler options), for a caller that looked h up already.
func (p attemptPolicy) settingsWith(h registered, j *store.JobRow, payload phpjson.Value) attemptSettings {
	s := attemptSettings{maxAttempts: j.MaxAttempts, timeout: p.timeout, backoff: p.backoff}
	if h.opts.maxAttempts > 0 {
		s.maxAttempts = h.opts.maxAttempts
	}
	if h.opts.timeout > 0 {
		s.timeout = h.opts.timeout
	}
	if h.opts.backoff != nil {
		s.backoff = *h.opts.backoff
	}
	p.reg.classRetrySettings(j, &s)
	rt := parseRuntime(payload)
	if rt.MaxAttempts > 0 {
		s.maxAttempts = rt.MaxAttempts
	}
	if rt.Timeout > 0 {
		s.timeout = rt.Timeout
	}
	if rt.Backoff != nil {
		s.backoff = *rt.Backoff
	}
	return s
}

// MaxAttemptsOf is the attempt limit a worker applies to j: the row's
// max_attempts, then the handler's options and PHP class config, then the
// payload's __queuety_runtime.max_attempts. Pages that show "attempts n/m"
// use it, so a job buried at a runtime limit of 2 reads 2/2, not 2/3.
func (c *Client) MaxAttemptsOf(reg *Registry, j *JobInfo) int {
	if reg == nil {
		reg = NewRegistry()
	}
	row := rowview.JobRow(j)
	return c.settingsFor(reg, &row, parsePayloadLenient(row.Payload)).maxAttempts
}

// retryOrBury is the decision on attempt when it ended with err (nil: the
// row went stale): bury, or retry after delay. Settings the job's own code
// declared for the failure (AttemptSettings) replace s; an invalid row and
// an external worker's non-retryable failure are buried whatever attempts
// remain.
func (s attemptSettings) retryOrBury(attempt int, err error) (bury bool, delay time.Duration) {
	s, delay = declaredSettings(err, s, attempt)
	var invalid *InvalidJobError
	return errors.As(err, &invalid) || errors.Is(err, errNonRetryable) || attempt >= s.maxAttempts, delay
}

// errNonRetryable is an external worker's failure reported non-retryable
// (TaskFailure.NonRetryable).
var errNonRetryable = errors.New("queuety: non-retryable failure")

// declaredSettings applies an AttemptSettings carried by err to s, and
// returns the delay for a retry after attempt.
func declaredSettings(err error, s attemptSettings, attempt int) (attemptSettings, time.Duration) {
	delay := s.backoff.Delay(attempt)
	var as AttemptSettings
	if !errors.As(err, &as) {
		return s, delay
	}
	if n := as.MaxAttempts(); n > 0 {
		s.maxAttempts = n
	}
	if d, ok := as.RetryDelay(); ok {
		delay = d
	}
	return s, delay
}

// failureWrite is the write of a failed attempt given its `failed` log row:
// buried (the row becomes the `buried` one) or retried after delay
// (`failed, retried`), as Queuety logs them.
func failureWrite(row *store.JobRow, at store.Attempt, bury bool, delay time.Duration, failed store.LogRow) store.Failure {
	f := store.Failure{Attempt: at, Bury: bury, ErrorMessage: failed.ErrorMessage.String}
	if bury {
		failed.Event = store.EventBuried
		f.Logs = []store.LogRow{failed}
		return f
	}
	f.Delay = delay
	retried := store.LogFor(row, store.EventRetried)
	retried.Attempt = failed.Attempt
	f.Logs = []store.LogRow{failed, retried}
	return f
}
