package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what queuety_build_info says of the binary.
type Build struct {
	Version, GoVersion, Commit string
}

// ops are the counters of the worker's background work (stale rescues,
// retention sweeps), the queue wait of claimed jobs and the completions
// read from the log rows.
type ops struct {
	queueWait     *prometheus.HistogramVec
	rescued       *prometheus.CounterVec
	retentionRuns *prometheus.CounterVec
	deleted       *prometheus.CounterVec
	retentionOK   prometheus.Gauge
	logCompleted  *prometheus.CounterVec // collected by tables, after the snapshot that counts
}

func newOps() *ops {
	return &ops{
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queuety_job_queue_wait_seconds",
			Help:    "How long jobs this process claimed waited between becoming due (available_at) and their claim, by queue.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"queue"}),
		rescued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queuety_stale_rescued_total",
			Help: "Stale jobs (a worker stopped heartbeating them) this process's stale sweep recovered, by outcome (retried, buried).",
		}, []string{"outcome"}),
		retentionRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queuety_retention_runs_total",
			Help: "Retention sweeps this process started, by result (ok, failed, skipped: another process held the lock).",
		}, []string{"result"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queuety_retention_deleted_rows_total",
			Help: "Rows this process's retention sweeps deleted, by kind.",
		}, []string{"kind"}),
		retentionOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queuety_retention_last_success_timestamp_seconds",
			Help: "Unix time of this process's last retention sweep that finished (0: none yet).",
		}),
		logCompleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queuety_log_completions_total",
			Help: "Completed log rows written since this process started, by queue: one per completed job of every worker on these tables, the plugin's PHP workers included. A counter, so a retention sweep never lowers it; each daemon counts the whole fleet, so aggregate with max, not sum.",
		}, []string{"queue"}),
	}
}

func (o *ops) Describe(ch chan<- *prometheus.Desc) {
	o.queueWait.Describe(ch)
	o.rescued.Describe(ch)
	o.retentionRuns.Describe(ch)
	o.deleted.Describe(ch)
	o.retentionOK.Describe(ch)
}

func (o *ops) Collect(ch chan<- prometheus.Metric) {
	o.queueWait.Collect(ch)
	o.rescued.Collect(ch)
	o.retentionRuns.Collect(ch)
	o.deleted.Collect(ch)
	o.retentionOK.Collect(ch)
}

// init sets the series that must read 0 before anything happened.
func (o *ops) init() {
	for _, out := range []string{"retried", "buried"} {
		o.rescued.WithLabelValues(out)
	}
	for _, r := range []string{"ok", "failed", "skipped"} {
		o.retentionRuns.WithLabelValues(r)
	}
}

// newBuildInfo is queuety_build_info: one per registry, whatever the
// sites.
func newBuildInfo(b Build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "queuety_build_info",
		Help: "Always 1; the labels say what the binary was built from.",
	}, []string{"version", "go_version", "commit"})
	g.WithLabelValues(orUnknown(b.Version), orUnknown(b.GoVersion), orUnknown(b.Commit)).Set(1)
	return g
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// ObserveQueueWait records how long a claimed job waited since it was due.
func (c *Counters) ObserveQueueWait(queue string, d time.Duration) {
	c.ops.queueWait.WithLabelValues(c.capped(c.queues, c.maxQueues, queue, OtherQueue)).Observe(max(0, d.Seconds()))
}

// ObserveRescue records one stale sweep's recoveries.
func (c *Counters) ObserveRescue(retried, buried int) {
	c.ops.rescued.WithLabelValues("retried").Add(float64(retried))
	c.ops.rescued.WithLabelValues("buried").Add(float64(buried))
}

// ObserveRetention records one retention sweep: its result (ok, failed,
// skipped) and the rows it deleted by kind (a failed sweep may have
// deleted some first). Kinds are the few retention kinds.
func (c *Counters) ObserveRetention(result string, deleted map[string]int) {
	c.ops.retentionRuns.WithLabelValues(result).Inc()
	for kind, n := range deleted {
		c.ops.deleted.WithLabelValues(kind).Add(float64(n))
	}
	if result == "ok" {
		c.ops.retentionOK.Set(float64(c.now().Unix()))
	}
}

// Pool reports the PHP pool.
type Pool interface {
	PoolStats() PoolStats
}

// PoolStats is the PHP pool at one moment; the counts are since its start.
type PoolStats struct {
	Slots, Processes, Busy                 int
	Spawns, Crashes, Kills, Recycles, Jobs int
}

var (
	descPoolProcs    = prometheus.NewDesc("queuety_php_pool_processes", "PHP pool processes alive in their slots.", nil, nil)
	descPoolSlots    = prometheus.NewDesc("queuety_php_pool_slots", "PHP pool slots, by state (busy, idle).", []string{"state"}, nil)
	descPoolRestarts = prometheus.NewDesc("queuety_php_pool_restarts_total", "PHP pool processes started to replace one (after a crash, a kill or a recycle).", nil, nil)
	descPoolKills    = prometheus.NewDesc("queuety_php_pool_kills_total", "PHP pool processes killed because their job's time ran out or it was cancelled.", nil, nil)
	descPoolCrashes  = prometheus.NewDesc("queuety_php_pool_crashes_total", "PHP pool processes that died on their own.", nil, nil)
	descPoolRecycles = prometheus.NewDesc("queuety_php_pool_recycles_total", "PHP pool processes retired after their job or memory limit.", nil, nil)
)

// pool collects the PHP pool's gauges and counters, and the php_pool value
// of queuety_live_workers (0 without a pool, so the series is always there).
type pool struct{ m *Metrics }

func (p *pool) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPoolProcs, descPoolSlots, descPoolRestarts, descPoolKills, descPoolCrashes, descPoolRecycles} {
		ch <- d
	}
}

func (p *pool) Collect(ch chan<- prometheus.Metric) {
	var st PoolStats
	if p.m.cfg.Pool != nil {
		st = p.m.cfg.Pool.PoolStats()
	}
	ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(st.Processes), "php_pool")
	if p.m.cfg.Pool == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descPoolProcs, prometheus.GaugeValue, float64(st.Processes))
	ch <- prometheus.MustNewConstMetric(descPoolSlots, prometheus.GaugeValue, float64(st.Busy), "busy")
	ch <- prometheus.MustNewConstMetric(descPoolSlots, prometheus.GaugeValue, float64(max(0, st.Slots-st.Busy)), "idle")
	ch <- prometheus.MustNewConstMetric(descPoolRestarts, prometheus.CounterValue, float64(max(0, st.Spawns-st.Slots)))
	ch <- prometheus.MustNewConstMetric(descPoolKills, prometheus.CounterValue, float64(st.Kills))
	ch <- prometheus.MustNewConstMetric(descPoolCrashes, prometheus.CounterValue, float64(st.Crashes))
	ch <- prometheus.MustNewConstMetric(descPoolRecycles, prometheus.CounterValue, float64(st.Recycles))
}
