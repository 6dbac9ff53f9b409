package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/internal/metrics"
	"github.com/queuety-go/queuety/internal/sdnotify"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// metricsListenFlag is --metrics-listen (work, serve).
func metricsListenFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"QUEUETY_METRICS_LISTEN"},
		Usage: "also serve /metrics, /healthz and /readyz without a token on this `address`; a bare port or \":port\" binds 127.0.0.1, another interface must be named (e.g. 0.0.0.0:9090)"}
}

// metricsAddr resolves --metrics-listen: the listener has no token, so an
// address without a host ("9090", ":9090") binds loopback, never every
// interface; any other interface must be spelled out.
func metricsAddr(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, ":") {
		raw = ":" + raw
	}
	host, port, err := net.SplitHostPort(raw)
	if err != nil || port == "" {
		return "", usagef("--metrics-listen %q: want host:port, :port or a port", raw)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// observer passes a worker's hooks to its counters: the process's, or with
// many sites its site label's, looked up at each call (a site's label
// changes as sites come and go: metrics.Sites).
type observer struct{ counters func() *metrics.Counters }

func (o observer) ObserveClaim(d time.Duration, jobs int) { o.counters().ObserveClaim(d, jobs) }

func (o observer) ObserveClaimRollback() { o.counters().ObserveClaimRollback() }

func (o observer) ObserveJob(queue, handler string, outcome queuety.Outcome, d time.Duration) {
	o.counters().ObserveJob(queue, handler, string(outcome), d)
}

func (o observer) ObserveQueueWait(queue string, d time.Duration) {
	o.counters().ObserveQueueWait(queue, d)
}

func (o observer) ObserveRescue(retried, buried int) { o.counters().ObserveRescue(retried, buried) }

func (o observer) ObserveRetention(result string, deleted map[queuety.RetentionKind]int) {
	kinds := make(map[string]int, len(deleted))
	for k, n := range deleted {
		kinds[string(k)] = n
	}
	o.counters().ObserveRetention(result, kinds)
}

// storeTables reads the metrics snapshot from the store: the table counts,
// who serves each queue, and the completed log rows written since the
// previous read.
type storeTables struct {
	st *store.Store
	// liveFor: a registration heartbeated within it is live
	// (Config.WorkerStaleAfter).
	liveFor time.Duration
	now     func() time.Time

	// The completed log rows are counted in id ranges: (counted, seen]
	// at each read, then seen moves to the newest id. Counting one read
	// behind the newest id gives a row whose id was allotted before that
	// read, but whose transaction committed after it, time to commit.
	mu      sync.Mutex
	started bool
	counted int64
	seen    int64
}

func (t *storeTables) Snapshot(ctx context.Context) (metrics.Snapshot, error) {
	s, err := t.st.MetricsSnapshot(ctx)
	if err != nil {
		return metrics.Snapshot{}, err
	}
	now := t.now()
	f, err := t.st.MetricsFleet(ctx, now.Add(-t.liveFor), now.Add(-queuety.PHPSeenWindow))
	if err != nil {
		return metrics.Snapshot{}, err
	}
	out := metrics.Snapshot{Completed: s.Completed, OldestPending: s.OldestPending, Paused: s.Paused, Workflows: s.Workflows,
		WorkerSessions: s.WorkerSessions, LiveWorkers: map[string]float64{}}
	for _, j := range s.Jobs {
		out.Jobs = append(out.Jobs, metrics.JobCount{Queue: j.Queue, Status: j.Status, N: j.N})
	}
	for _, a := range s.Activities {
		out.Activities = append(out.Activities, metrics.ActivityCount{Mode: a.Mode, State: a.Status, N: a.N})
	}
	for _, w := range s.Waiting {
		out.Waiting = append(out.Waiting, metrics.WaitingCount{Queue: w.Queue, Reason: w.Reason, N: w.N})
	}
	for _, w := range f.Workers {
		out.LiveWorkers[w.Runtime]++
		for _, q := range w.Queues {
			out.QueueWorkers = append(out.QueueWorkers, metrics.QueueWorkers{Queue: q, Runtime: w.Runtime, N: 1})
		}
	}
	for _, q := range f.PHPSeen {
		out.QueueWorkers = append(out.QueueWorkers, metrics.QueueWorkers{Queue: q, Runtime: "plugin_php", N: 1})
	}
	if out.Completions, err = t.completions(ctx); err != nil {
		return metrics.Snapshot{}, err
	}
	return out, nil
}

// completions counts the completed log rows of (counted, seen] and moves
// the window on. The first read only finds where the log ends: the
// counter counts what this process saw written.
func (t *storeTables) completions(ctx context.Context) ([]metrics.QueueCount, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	head, err := t.st.LogHead(ctx)
	if err != nil {
		return nil, err
	}
	if !t.started {
		t.started, t.counted, t.seen = true, head, head
		return nil, nil
	}
	if head < t.seen { // the logs table was emptied (flush): start over
		t.counted, t.seen = head, head
		return nil, nil
	}
	rows, err := t.st.LogCompletions(ctx, t.counted, t.seen)
	if err != nil {
		return nil, err
	}
	t.counted, t.seen = t.seen, head
	out := make([]metrics.QueueCount, 0, len(rows))
	for _, r := range rows {
		out = append(out, metrics.QueueCount{Queue: r.Queue, N: r.N})
	}
	return out, nil
}

// lazyPool is the PHP pool once the worker started it.
type lazyPool struct {
	mu sync.Mutex
	p  *phppool.Pool
}

func (l *lazyPool) set(p *phppool.Pool) {
	l.mu.Lock()
	l.p = p
	l.mu.Unlock()
}

func (l *lazyPool) PoolStats() metrics.PoolStats {
	l.mu.Lock()
	p := l.p
	l.mu.Unlock()
	if p == nil {
		return metrics.PoolStats{}
	}
	return poolStats(p)
}

// poolStats is what the metrics show of a PHP pool.
func poolStats(p *phppool.Pool) metrics.PoolStats {
	st := p.Stats()
	out := metrics.PoolStats{Slots: len(st.PIDs), Busy: st.Busy, Spawns: st.Spawns, Crashes: st.Crashes,
		Kills: st.Kills, Recycles: st.Recycles, Jobs: st.Jobs}
	for _, pid := range st.PIDs {
		if pid != 0 {
			out.Processes++
		}
	}
	return out
}

// lazySlots is the worker's slots once it exists (it is built after the
// metrics, whose observer it takes).
type lazySlots struct{ w *queuety.Worker }

func (s *lazySlots) Slots() (int, int) {
	if s.w == nil {
		return 0, 0
	}
	return s.w.Slots()
}

// readiness is what GET /readyz checks: the database answers, the schema
// is migrated (checked again every schemaRecheck once it was), and the
// worker, when there is one, is running and not stopping.
// Until attach, the daemon is still connecting (the metrics listener
// starts first, so a probe sees "not ready" while the start waits for the
// database).
type readiness struct {
	mu       sync.Mutex
	st       *store.Store // nil: still connecting
	worker   func() bool  // nil: serve, no worker
	schemaOK time.Time
}

const schemaRecheck = 30 * time.Second

func (r *readiness) attach(st *store.Store, worker func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st, r.worker = st, worker
}

func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	st, worker := r.st, r.worker
	r.mu.Unlock()
	if st == nil {
		return errors.New("still connecting to the database")
	}
	if worker != nil && !worker() {
		return errors.New("the worker is not running")
	}
	if err := st.Ping(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	fresh := !r.schemaOK.IsZero() && time.Since(r.schemaOK) < schemaRecheck
	r.mu.Unlock()
	if fresh {
		return nil
	}
	if err := st.CheckSchema(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.schemaOK = time.Now()
	r.mu.Unlock()
	return nil
}

// observability is the metrics and readiness of one daemon, and its
// token-less metrics listener when --metrics-listen is set.
type observability struct {
	m      *metrics.Metrics
	slots  *lazySlots
	pool   *lazyPool // work: the PHP pool's, once started
	ready  *readiness
	addr   string // resolved --metrics-listen, or ""
	tables *lazyTables
	log    *slog.Logger
	// idleTimeout overrides metricsIdleTimeout (tests).
	idleTimeout time.Duration
	l           *httpListener // while --metrics-listen is served
}

// newObservability builds the metrics and sets cfg.Observer (work: worker
// true) before the client is opened; call attach once it is.
func newObservability(c *cli.Context, cfg *queuety.Config, worker bool) (*observability, error) {
	o := &observability{slots: &lazySlots{}, ready: &readiness{}, log: cfg.Logger}
	if raw := c.String("metrics-listen"); raw != "" {
		addr, err := metricsAddr(raw)
		if err != nil {
			return nil, err
		}
		o.addr = addr
	}
	var slots metrics.Slots
	if worker {
		slots = o.slots
	}
	tables := &lazyTables{}
	b := ReadBuildInfo()
	mcfg := metrics.Config{Tables: tables, Slots: slots, Build: metrics.Build{Version: b.Version, GoVersion: b.GoVersion, Commit: b.Commit},
		Logger: cfg.Logger}
	if worker {
		o.pool = &lazyPool{}
		mcfg.Pool = o.pool
	}
	o.m = metrics.New(mcfg)
	o.tables = tables
	if worker {
		cfg.Observer = observer{func() *metrics.Counters { return o.m.Counters }}
	}
	return o, nil
}

// lazyTables is the store once the client is open.
type lazyTables struct{ t *storeTables }

func (l *lazyTables) Snapshot(ctx context.Context) (metrics.Snapshot, error) {
	if l.t == nil {
		return metrics.Snapshot{}, errors.New("not connected")
	}
	return l.t.Snapshot(ctx)
}

// attach connects the metrics and readiness to the open client and, for
// work, to its worker.
func (o *observability) attach(client *queuety.Client, w *queuety.Worker) {
	cfg := client.Config()
	o.tables.t = &storeTables{st: clientstore.Of(client), liveFor: cfg.WorkerStaleAfter, now: cfg.Clock.Now}
	o.log = client.Config().Logger
	var ready func() bool
	if w != nil {
		o.slots.w = w
		ready = w.Ready
	}
	o.ready.attach(clientstore.Of(client), ready)
}

// startListener serves /metrics, /healthz and /readyz without a token on
// the --metrics-listen address, if one was given.
func (o *observability) startListener(ctx context.Context, stderr io.Writer, who string) error {
	if o.addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.m.Handler())
	mux.Handle("GET /healthz", httpapi.HealthHandler())
	mux.Handle("GET /readyz", httpapi.ReadyHandler(o.ready.check))
	l, err := startLocalListener(ctx, o.addr, mux, o.log, o.idleTimeout)
	if err != nil {
		return err
	}
	o.l = l
	fmt.Fprintf(stderr, "queuety %s: metrics on http://%s/metrics\n", who, l.addr())
	return nil
}

// httpListener is a running HTTP listener of the daemon's own: the
// --metrics-listen one, and the dashboard of many sites (work --http and
// serve with --network or --sites).
type httpListener struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	// base is the start's ctx without its end: the stop, which comes once
	// that ctx ended, keeps its values.
	base context.Context
}

// startHTTPListener listens on addr and serves srv there until stop; a
// serve error past the start is logged with what (the listener's name).
func startHTTPListener(ctx context.Context, addr string, srv *http.Server, log *slog.Logger, what string) (*httpListener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", addr, err)
	}
	l := &httpListener{srv: srv, ln: ln, done: make(chan struct{}), base: context.WithoutCancel(ctx)}
	go func() {
		defer close(l.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" stopped", "err", err)
		}
	}()
	return l, nil
}

func (l *httpListener) addr() string { return l.ln.Addr().String() }

// stop shuts the listener down, waiting httpShutdownWait for requests
// under way.
func (l *httpListener) stop() {
	ctx, cancel := context.WithTimeout(l.base, httpShutdownWait)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		_ = l.srv.Close()
	}
	<-l.done
}

// startLocalListener serves h without a token on addr (a resolved
// --metrics-listen): on loopback it answers only loopback Host names, on
// another interface it warns that anyone who reaches it reads it.
func startLocalListener(ctx context.Context, addr string, h http.Handler, log *slog.Logger, idle time.Duration) (*httpListener, error) {
	if httpapi.Loopback(addr) {
		// No token here: a loopback listener answers only loopback Host
		// names, so a rebinding page cannot read it (N10).
		h = httpapi.LocalHostGuard(addr, h)
	}
	l, err := startHTTPListener(ctx, addr, metricsServer(h, log, idle), log, "metrics listener")
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	if !httpapi.Loopback(addr) {
		log.Warn("serving /metrics without a token on a non-loopback address: anyone who reaches it can read queue names and counts", "listen", addr)
	}
	return l, nil
}

// metricsIdleTimeout closes a keep-alive connection to the metrics
// listener idle for that long, as the API listener does: a scraper
// reconnects in a millisecond, while connections nobody closes would
// pile up to the file limit (N12).
const metricsIdleTimeout = 2 * time.Minute

// metricsServer is the metrics listener's server: every timeout set
// (header, whole request, response, idle keep-alive); idle 0 is
// metricsIdleTimeout.
func metricsServer(h http.Handler, log *slog.Logger, idle time.Duration) *http.Server {
	if idle <= 0 {
		idle = metricsIdleTimeout
	}
	return &http.Server{Handler: h,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// stopListener stops the metrics listener, if it runs.
func (o *observability) stopListener() {
	if o == nil || o.l == nil {
		return
	}
	defer func() { o.l = nil }() // stopped once: work stops it after the worker, and again on return
	o.l.stop()
}

// notifyReady tells systemd (Type=notify, $NOTIFY_SOCKET) that the daemon
// is ready and pings its watchdog at half of $WATCHDOG_USEC while healthy
// (nil: always) holds; the returned func stops the pings and sends
// STOPPING=1. Without $NOTIFY_SOCKET nothing is sent.
func notifyReady(ctx context.Context, log *slog.Logger, healthy func() bool) (stopping func()) {
	sd := sdnotify.FromEnv(nil)
	if !sd.Enabled() {
		return func() {}
	}
	if err := sd.Notify(sdnotify.Ready); err != nil {
		log.Warn("telling systemd we are ready failed", "socket_env", "NOTIFY_SOCKET", "err", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sd.RunWatchdog(wctx, healthy) }()
	return func() {
		cancel()
		<-done
		_ = sd.Notify(sdnotify.Stopping)
	}
}
