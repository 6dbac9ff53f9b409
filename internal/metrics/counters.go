package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Counters are the counters and histograms one worker reports to through
// its observer hooks (claims, attempts, queue waits, sweeps, webhooks),
// with the handler and queue label values capped. A Metrics has one for
// its process; a Sites one for each site label.
type Counters struct {
	maxHandlers, maxQueues int
	now                    func() time.Time

	processed      *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	claim          prometheus.Histogram
	claimRollbacks prometheus.Counter
	webhooks       *prometheus.CounterVec // webhooks.go
	ops            *ops                   // ops.go

	mu       sync.RWMutex
	handlers map[string]struct{}
	queues   map[string]struct{} // queue labels of the counters
}

func newCounters(maxHandlers, maxQueues int, now func() time.Time) *Counters {
	c := &Counters{maxHandlers: maxHandlers, maxQueues: maxQueues, now: now,
		handlers: map[string]struct{}{}, queues: map[string]struct{}{}}
	c.processed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queuety_jobs_processed_total",
		Help: "Job attempts this process finished, by queue, handler and outcome (completed, retried, buried).",
	}, []string{"queue", "handler", "outcome"})
	c.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "queuety_job_duration_seconds",
		Help:    "How long job attempts run in this process took, by queue and handler.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"queue", "handler"})
	c.claim = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "queuety_claim_duration_seconds",
		Help:    "How long this process's claims took, from the transaction's start to its commit.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	c.claimRollbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "queuety_claim_rollbacks_total",
		Help: "Claims of this process the server rolled back (deadlocks, lock waits, a cluster's certification failures); nothing ran, the rows were claimed again.",
	})
	c.webhooks = newWebhookCounter()
	c.ops = newOps()
	c.ops.init()
	return c
}

// Describe and Collect make the counters one prometheus.Collector (the
// log completions are collected by the table gauges, after the read that
// counts them).
func (c *Counters) Describe(ch chan<- *prometheus.Desc) {
	c.processed.Describe(ch)
	c.duration.Describe(ch)
	c.claim.Describe(ch)
	c.claimRollbacks.Describe(ch)
	c.webhooks.Describe(ch)
	c.ops.Describe(ch)
}

func (c *Counters) Collect(ch chan<- prometheus.Metric) {
	c.processed.Collect(ch)
	c.duration.Collect(ch)
	c.claim.Collect(ch)
	c.claimRollbacks.Collect(ch)
	c.webhooks.Collect(ch)
	c.ops.Collect(ch)
}

// ObserveClaim records one claim round.
func (c *Counters) ObserveClaim(d time.Duration, _ int) { c.claim.Observe(d.Seconds()) }

// ObserveClaimRollback counts a claim the server rolled back.
func (c *Counters) ObserveClaimRollback() { c.claimRollbacks.Inc() }

// ObserveJob records one finished attempt.
func (c *Counters) ObserveJob(queue, handler, outcome string, d time.Duration) {
	handler = c.capped(c.handlers, c.maxHandlers, handler, OtherHandler)
	queue = c.capped(c.queues, c.maxQueues, queue, OtherQueue)
	c.processed.WithLabelValues(queue, handler, outcome).Inc()
	c.duration.WithLabelValues(queue, handler).Observe(d.Seconds())
}

// capped is v while fewer than limit distinct values were seen in seen,
// else other.
func (c *Counters) capped(seen map[string]struct{}, limit int, v, other string) string {
	c.mu.RLock()
	_, ok := seen[v]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := seen[v]; ok {
		return v
	}
	if len(seen) >= limit {
		return other
	}
	seen[v] = struct{}{}
	return v
}
