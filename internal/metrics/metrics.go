// Package metrics is queuety-go's Prometheus exposition: gauges read from
// the tables at scrape time (cached briefly, so several scrapers or a fast
// scrape interval cost one read), counters and histograms counted in this
// process by the worker, and the Go runtime and process collectors.
//
// It depends on nothing of queuety-go: the tables are read through
// Snapshotter, the worker's slots through Slots, and the worker reports to
// a Recorder through its observer hooks (an adapter in the CLI).
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults.
const (
	// DefaultCacheFor is how long a table snapshot is reused.
	DefaultCacheFor = 2 * time.Second
	// DefaultMaxHandlers caps the distinct handler label values; the rest
	// are counted under OtherHandler.
	DefaultMaxHandlers = 200
	// OtherHandler is the handler label of handlers past the cap.
	OtherHandler = "other"
	// snapshotTimeout bounds one read of the tables.
	snapshotTimeout = 5 * time.Second
)

// Snapshot is what the tables say at one moment.
type Snapshot struct {
	Jobs           []JobCount         // open jobs (not completed) by queue and status
	Completed      float64            // completed jobs of every queue
	OldestPending  map[string]float64 // queue → seconds
	Paused         []string           // paused queues
	Workflows      map[string]float64 // status → count
	WorkerSessions map[string]float64 // status → count
	Activities     []ActivityCount
}

// JobCount is the number of jobs of a queue in a status.
type JobCount struct {
	Queue, Status string
	N             float64
}

// ActivityCount is the number of activity executions of a mode in a state.
type ActivityCount struct {
	Mode, State string
	N           float64
}

// Snapshotter reads a Snapshot from the tables.
type Snapshotter interface {
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Slots reports a worker's busy slots and its total.
type Slots interface {
	Slots() (busy, total int)
}

// Config configures a Metrics.
type Config struct {
	Tables Snapshotter // required
	// Slots is the worker's (nil without one: serve).
	Slots       Slots
	CacheFor    time.Duration // default DefaultCacheFor
	MaxHandlers int           // default DefaultMaxHandlers
	// Now is the clock of the cache (default time.Now).
	Now func() time.Time
}

// Metrics holds the registry and the in-process collectors.
type Metrics struct {
	cfg      Config
	registry *prometheus.Registry

	processed *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	claim     prometheus.Histogram
	webhooks  *prometheus.CounterVec // webhooks.go

	mu       sync.RWMutex
	handlers map[string]struct{}

	snapMu  sync.Mutex
	snap    Snapshot
	snapErr error
	snapAt  time.Time
}

// New builds the registry: table gauges, in-process counters, Go runtime
// and process collectors.
func New(cfg Config) *Metrics {
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	if cfg.MaxHandlers <= 0 {
		cfg.MaxHandlers = DefaultMaxHandlers
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Metrics{cfg: cfg, registry: prometheus.NewRegistry(), handlers: map[string]struct{}{}}
	m.processed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queuety_jobs_processed_total",
		Help: "Job attempts this process finished, by queue, handler and outcome (completed, retried, buried).",
	}, []string{"queue", "handler", "outcome"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "queuety_job_duration_seconds",
		Help:    "How long job attempts run in this process took, by queue and handler.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"queue", "handler"})
	m.claim = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "queuety_claim_duration_seconds",
		Help:    "How long this process's claims took, from the transaction's start to its commit.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	m.webhooks = newWebhookCounter()
	m.registry.MustRegister(m.processed, m.duration, m.claim, m.webhooks, &tables{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the Prometheus registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ObserveClaim records one claim round.
func (m *Metrics) ObserveClaim(d time.Duration, _ int) { m.claim.Observe(d.Seconds()) }

// ObserveJob records one finished attempt.
func (m *Metrics) ObserveJob(queue, handler, outcome string, d time.Duration) {
	handler = m.handlerLabel(handler)
	m.processed.WithLabelValues(queue, handler, outcome).Inc()
	m.duration.WithLabelValues(queue, handler).Observe(d.Seconds())
}

// handlerLabel is handler while fewer than MaxHandlers distinct ones were
// seen, else OtherHandler.
func (m *Metrics) handlerLabel(h string) string {
	m.mu.RLock()
	_, ok := m.handlers[h]
	m.mu.RUnlock()
	if ok {
		return h
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.handlers[h]; ok {
		return h
	}
	if len(m.handlers) >= m.cfg.MaxHandlers {
		return OtherHandler
	}
	m.handlers[h] = struct{}{}
	return h
}

// snapshot returns the cached table snapshot, read again once it is older
// than CacheFor. Concurrent scrapes share one read.
func (m *Metrics) snapshot() (Snapshot, error) {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	now := m.cfg.Now()
	if !m.snapAt.IsZero() && now.Sub(m.snapAt) < m.cfg.CacheFor {
		return m.snap, m.snapErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	m.snap, m.snapErr = m.cfg.Tables.Snapshot(ctx)
	m.snapAt = now
	return m.snap, m.snapErr
}

var (
	descJobs      = prometheus.NewDesc("queuety_jobs", "Jobs in the table not completed (pending, processing, failed, buried), by queue and status.", []string{"queue", "status"}, nil)
	descCompleted = prometheus.NewDesc("queuety_jobs_completed", "Completed jobs in the table, every queue (counted through the status index only; purge keeps it small).", nil, nil)
	descOldest    = prometheus.NewDesc("queuety_queue_oldest_pending_age_seconds", "Seconds the oldest runnable pending job of the queue has waited (0: none waiting).", []string{"queue"}, nil)
	descPaused    = prometheus.NewDesc("queuety_queue_paused", "1 when the queue is paused.", []string{"queue"}, nil)
	descWorkflows = prometheus.NewDesc("queuety_workflows", "Workflows in the table, by status.", []string{"status"}, nil)
	descSessions  = prometheus.NewDesc("queuety_worker_sessions", "Worker sessions in the table (every namespace), by state.", []string{"state"}, nil)
	descActs      = prometheus.NewDesc("queuety_activities", "Activity executions in the table, by mode and state.", []string{"mode", "state"}, nil)
	descSlots     = prometheus.NewDesc("queuety_worker_slots", "This worker's job slots, by state (busy, idle).", []string{"state"}, nil)
	descUp        = prometheus.NewDesc("queuety_database_up", "1 when the last read of the tables succeeded.", nil, nil)
)

// tables collects the scrape-time gauges.
type tables struct{ m *Metrics }

func (t *tables) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descCompleted, descOldest, descPaused, descWorkflows, descSessions, descActs, descSlots, descUp} {
		ch <- d
	}
}

func (t *tables) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if s := t.m.cfg.Slots; s != nil {
		busy, total := s.Slots()
		gauge(descSlots, float64(busy), "busy")
		gauge(descSlots, float64(max(0, total-busy)), "idle")
	}
	snap, err := t.m.snapshot()
	if err != nil {
		gauge(descUp, 0)
		return
	}
	gauge(descUp, 1)
	gauge(descCompleted, snap.Completed)
	queues := map[string]bool{}
	for _, j := range snap.Jobs {
		gauge(descJobs, j.N, j.Queue, j.Status)
		queues[j.Queue] = true
	}
	paused := map[string]bool{}
	for _, q := range snap.Paused {
		paused[q] = true
		queues[q] = true
	}
	for q := range queues {
		gauge(descOldest, snap.OldestPending[q], q)
		v := 0.0
		if paused[q] {
			v = 1
		}
		gauge(descPaused, v, q)
	}
	for st, n := range snap.Workflows {
		gauge(descWorkflows, n, st)
	}
	for st, n := range snap.WorkerSessions {
		gauge(descSessions, n, st)
	}
	for _, a := range snap.Activities {
		gauge(descActs, a.N, a.Mode, a.State)
	}
}
