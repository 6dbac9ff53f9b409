// Package metrics is queuety-go's Prometheus exposition: gauges read from
// the tables at scrape time (cached briefly, so several scrapers or a fast
// scrape interval cost one read), counters and histograms counted in this
// process by the worker, and the Go runtime and process collectors.
//
// It depends on nothing of queuety-go: the tables are read through
// Snapshotter, the worker's slots through Slots, and the worker reports to
// its Counters through its observer hooks (an adapter in the CLI). Sites
// is the same for a process serving many sites: each site's series with a
// site label, the label values capped.
package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
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
	// DefaultMaxQueues caps the distinct queue label values of a scrape
	// and of the worker's counters: anyone who can dispatch names queues,
	// so without a cap 10,000 queues made 30,000 series (N8). The queues
	// past it, and a queue named "other" itself, are summed under
	// OtherQueue.
	DefaultMaxQueues = 100
	// OtherQueue is the queue label of the queues past the cap.
	OtherQueue = "other"
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
	// Waiting: due pending jobs that cannot run yet, by what they wait on.
	Waiting []WaitingCount
	// QueueWorkers: live workers serving each queue, by runtime (go,
	// external: registrations; plugin_php: 1 when the plugin's PHP workers,
	// which do not register, ran a job there lately).
	QueueWorkers []QueueWorkers
	// LiveWorkers: live registrations by runtime (go, external).
	LiveWorkers map[string]float64
	// Completions: completed log rows written since the previous snapshot,
	// by queue (every worker's, the plugin's PHP workers' too).
	Completions []QueueCount
}

// WaitingCount is the number of due pending jobs of a queue waiting on
// something (Reason: dependency, workflow).
type WaitingCount struct {
	Queue, Reason string
	N             float64
}

// QueueWorkers is the number of live workers of one runtime serving a queue.
type QueueWorkers struct {
	Queue, Runtime string
	N              float64
}

// QueueCount is a count of one queue.
type QueueCount struct {
	Queue string
	N     float64
}

// Every series of these label values is emitted, at 0 too, so graphs have
// no gaps and absent() is never needed (as asynq's exporter).
var (
	JobStatuses      = []string{"pending", "processing", "failed", "buried"}
	WorkflowStatuses = []string{"running", "completed", "failed", "paused", "waiting_for_signal", "waiting_for_workflows", "cancelled"}
	SessionStates    = []string{"active", "closed", "expired", "failed", "orphaned"}
	WaitReasons      = []string{"dependency", "workflow"}
	QueueRuntimes    = []string{"go", "external", "plugin_php"}
)

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
	MaxQueues   int           // default DefaultMaxQueues
	// Now is the clock of the cache (default time.Now).
	Now func() time.Time
	// Pool is the PHP pool's, when the worker runs one (nil: none).
	Pool Pool
	// Build labels queuety_build_info.
	Build Build
	// Logger, when set, is told why a read of the tables failed.
	Logger *slog.Logger
}

// Metrics is the exposition of one site: its registry, the table gauges
// read at scrape time and the process's in-process Counters.
type Metrics struct {
	*Counters
	cfg      Config
	registry *prometheus.Registry

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
	if cfg.MaxQueues <= 0 {
		cfg.MaxQueues = DefaultMaxQueues
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Metrics{Counters: newCounters(cfg.MaxHandlers, cfg.MaxQueues, cfg.Now), cfg: cfg, registry: prometheus.NewRegistry()}
	m.registry.MustRegister(m.Counters, newBuildInfo(cfg.Build), &tables{m: m}, &pool{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the Prometheus registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
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
	prev := m.snapErr
	m.snap, m.snapErr = m.cfg.Tables.Snapshot(ctx)
	m.snapAt = now
	// queuety_database_up says it failed; the log says why, once per
	// change of the reason rather than at every scrape.
	if m.snapErr != nil && m.cfg.Logger != nil && (prev == nil || prev.Error() != m.snapErr.Error()) {
		m.cfg.Logger.Warn("metrics: reading the tables failed; queuety_database_up is 0", "err", m.snapErr)
	}
	if m.snapErr == nil {
		// Counted once per read: the snapshot is reused until the next.
		for _, c := range m.snap.Completions {
			m.ops.logCompleted.WithLabelValues(m.capped(m.queues, m.cfg.MaxQueues, c.Queue, OtherQueue)).Add(c.N)
		}
	}
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
	descWaiting   = prometheus.NewDesc("queuety_jobs_waiting", "Due pending jobs that cannot run yet, by queue and what they wait on (dependency: a job not completed; workflow: their workflow is not running). Not in the oldest-pending age.", []string{"queue", "reason"}, nil)
	descQWorkers  = prometheus.NewDesc("queuety_queue_live_workers", "Live workers serving the queue, by runtime: go and external count heartbeating registrations; plugin_php is 1 when the plugin's PHP workers (which do not register) ran a job there in the last 15 minutes.", []string{"queue", "runtime"}, nil)
	descLive      = prometheus.NewDesc("queuety_live_workers", "Live workers of the fleet by runtime: go and external are heartbeating registrations; php_pool is this daemon's PHP pool processes.", []string{"runtime"}, nil)
)

// tables collects the scrape-time gauges.
type tables struct{ m *Metrics }

func (t *tables) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descCompleted, descOldest, descPaused, descWorkflows, descSessions, descActs, descSlots, descUp, descWaiting, descQWorkers, descLive} {
		ch <- d
	}
	t.m.ops.logCompleted.Describe(ch)
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
	// After the snapshot, which adds the completions it read.
	t.m.ops.logCompleted.Collect(ch)
	if err != nil {
		gauge(descUp, 0)
		return
	}
	gauge(descUp, 1)
	gauge(descCompleted, snap.Completed)
	for _, q := range queueSeries(snap, t.m.cfg.MaxQueues) {
		for _, st := range JobStatuses {
			gauge(descJobs, q.jobs[st], q.name, st)
		}
		for _, r := range WaitReasons {
			gauge(descWaiting, q.waiting[r], q.name, r)
		}
		for _, r := range QueueRuntimes {
			gauge(descQWorkers, q.workers[r], q.name, r)
		}
		gauge(descOldest, q.oldest, q.name)
		gauge(descPaused, q.paused, q.name)
	}
	for _, st := range withKeys(WorkflowStatuses, snap.Workflows) {
		gauge(descWorkflows, snap.Workflows[st], st)
	}
	for _, st := range withKeys(SessionStates, snap.WorkerSessions) {
		gauge(descSessions, snap.WorkerSessions[st], st)
	}
	gauge(descLive, snap.LiveWorkers["go"], "go")
	gauge(descLive, snap.LiveWorkers["external"], "external")
	for _, a := range snap.Activities {
		gauge(descActs, a.N, a.Mode, a.State)
	}
}

// withKeys is known followed by the keys of m it lacks (a status a newer
// plugin writes is shown, not dropped), sorted.
func withKeys(known []string, m map[string]float64) []string {
	out := slices.Clone(known)
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// queueLabel is one queue label's values.
type queueLabel struct {
	name     string
	statuses []string // in first-seen order
	jobs     map[string]float64
	oldest   float64            // seconds; max over the queues folded into other
	paused   float64            // 1 when paused; in other, how many folded queues are
	open     float64            // open jobs, to rank queues
	waiting  map[string]float64 // reason → jobs
	workers  map[string]float64 // runtime → live workers
}

// queueSeries groups a snapshot by queue label: the max queues that rank
// first keep their own label (paused ones first, then by open jobs, then
// by name, so the choice is stable between scrapes), the rest are summed
// under OtherQueue (its oldest age is the oldest of them, its paused
// value how many of them are paused).
func queueSeries(snap Snapshot, max int) []*queueLabel {
	byName := map[string]*queueLabel{}
	var order []*queueLabel
	get := func(q string) *queueLabel {
		s, ok := byName[q]
		if !ok {
			s = &queueLabel{name: q, jobs: map[string]float64{}, waiting: map[string]float64{}, workers: map[string]float64{}}
			byName[q] = s
			order = append(order, s)
		}
		return s
	}
	for _, j := range snap.Jobs {
		s := get(j.Queue)
		if _, ok := s.jobs[j.Status]; !ok {
			s.statuses = append(s.statuses, j.Status)
		}
		s.jobs[j.Status] += j.N
		s.open += j.N
	}
	for _, q := range snap.Paused {
		get(q).paused = 1
	}
	for _, w := range snap.Waiting {
		get(w.Queue).waiting[w.Reason] += w.N
	}
	// A queue a live worker serves is named even when idle, so its
	// series read 0 rather than vanish between bursts.
	for _, w := range snap.QueueWorkers {
		get(w.Queue).workers[w.Runtime] += w.N
	}
	for _, s := range order {
		s.oldest = snap.OldestPending[s.name]
	}
	if len(order) <= max && byName[OtherQueue] == nil {
		return order
	}
	ranked := slices.Clone(order)
	slices.SortFunc(ranked, func(a, b *queueLabel) int {
		if c := cmp.Compare(b.paused, a.paused); c != 0 {
			return c
		}
		if c := cmp.Compare(b.open, a.open); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	other := &queueLabel{name: OtherQueue, jobs: map[string]float64{}, waiting: map[string]float64{}, workers: map[string]float64{}}
	out := make([]*queueLabel, 0, max+1)
	for _, s := range ranked {
		if s.name != OtherQueue && len(out) < max {
			out = append(out, s)
			continue
		}
		for _, st := range s.statuses {
			if _, ok := other.jobs[st]; !ok {
				other.statuses = append(other.statuses, st)
			}
			other.jobs[st] += s.jobs[st]
		}
		for r, n := range s.waiting {
			other.waiting[r] += n
		}
		for r, n := range s.workers {
			other.workers[r] += n
		}
		other.oldest = math.Max(other.oldest, s.oldest)
		other.paused += s.paused
	}
	return append(out, other)
}
