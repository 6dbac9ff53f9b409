package phppool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/queuety"
)

// Pool is a supervised set of PHP worker processes; it implements
// queuety.Handler. New, then Start, then Handle from any goroutine, then
// Stop.
type Pool struct {
	cfg Config
	log *slog.Logger

	requests chan *request
	// metaRequests are the class-settings reads (metadata.go), served by
	// a process of their own (metaLane) so that no backlog of jobs waiting
	// for the job processes can hold them up.
	metaRequests chan *request
	stopping     chan struct{} // closed by Stop
	life         context.Context
	endLife      context.CancelFunc // aborts spawns in progress when Stop gives up
	gaveUp       chan struct{}      // closed when crashes exceed the budget
	err          error              // why; written before gaveUp is closed

	mu      sync.Mutex
	slots   []*slot
	procs   map[*process]struct{} // live processes, for a forced stop
	crashes []time.Time
	stats   counters
	// meta caches the PHP classes' metadata (metadata.go).
	meta metadataCache

	started  atomic.Bool
	stopOnce sync.Once
	stopErr  error
	slotsWG  sync.WaitGroup // slot goroutines
	retireWG sync.WaitGroup // processes being recycled in the background
}

var _ queuety.Handler = (*Pool)(nil)

type request struct {
	ctx   context.Context
	job   *queuety.Job // a plain job, or
	step  *stepCall    // a workflow step
	reply chan error
	// output is a step's output, set before reply is sent.
	output []byte
}

// id is the job's id and handler, for logs.
func (r *request) id() (int64, string) {
	if r.step != nil && r.step.row == nil {
		return 0, r.step.class // a reducer, condition or compensation
	}
	if r.step != nil {
		return r.step.row.ID, r.step.row.Handler
	}
	return r.job.ID, r.job.Handler
}

func jobIDOf(r *request) int64 {
	id, _ := r.id()
	return id
}

type counters struct {
	jobs, crashes, kills, recycles, spawns int
}

// slot is one place for a process. Its goroutine owns the process; the
// fields are guarded by Pool.mu only because Stats reads them.
type slot struct {
	pid  int
	busy bool
	// consecutive crashes, for the restart backoff; slot goroutine only
	consecutive int
	// meta: the class-settings process (metaLane), not one of the
	// Config.Workers job processes; Stats leaves it out.
	meta bool
}

// New validates cfg. Nothing starts until Start.
func New(cfg Config, logger *slog.Logger) (*Pool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	life, end := context.WithCancel(context.Background())
	return &Pool{
		cfg: cfg, log: logger.With("component", "phppool"),
		requests: make(chan *request), metaRequests: make(chan *request), stopping: make(chan struct{}),
		life: life, endLife: end, gaveUp: make(chan struct{}),
		procs: map[*process]struct{}{},
	}, nil
}

// Start launches Config.Workers processes and waits until each has loaded
// the application. If any cannot start (a wrong command, a bootstrap that
// dies), Start fails with its reason and nothing is left running.
func (p *Pool) Start(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("phppool: already started")
	}
	p.meta.reset()
	procs := make([]*process, p.cfg.Workers)
	errs := make([]error, p.cfg.Workers)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = spawn(ctx, p.cfg, p.log)
		}()
	}
	wg.Wait()
	if failed, first := countErrors(errs); failed > 0 {
		for _, proc := range procs {
			if proc != nil {
				proc.retire(p.cfg.StopGrace)
			}
		}
		p.stopOnce.Do(func() { close(p.stopping); p.endLife() })
		return fmt.Errorf("phppool: %d of %d PHP workers failed to start; the first: %w", failed, len(procs), first)
	}
	for _, proc := range procs {
		s := &slot{pid: proc.pid}
		p.mu.Lock()
		p.slots = append(p.slots, s)
		p.procs[proc] = struct{}{}
		p.stats.spawns++
		p.mu.Unlock()
		p.slotsWG.Add(1)
		go p.serve(s, proc, p.requests, nil)
	}
	p.slotsWG.Add(1)
	go p.serveMeta()
	p.log.Info("PHP pool started", "workers", p.cfg.Workers, "php", procs[0].php, "command", p.cfg.Command)
	return nil
}

// Handle runs the job in the next free PHP process, waiting for one as
// long as ctx allows. A PHP exception comes back as *Error with PHP's
// class, message and trace.
func (p *Pool) Handle(ctx context.Context, job *queuety.Job) error {
	if !p.started.Load() {
		return errors.New("phppool: Handle called before Start")
	}
	return p.submit(ctx, &request{ctx: ctx, job: job, reply: make(chan error, 1)})
}

// StartsTimeLimit: an attempt's time limit runs from when a process takes
// the job, not while it waits for a free one (workflow/time_limit.go).
func (p *Pool) StartsTimeLimit() {}

// submit hands a request to the next free process and waits for its end.
func (p *Pool) submit(ctx context.Context, req *request) error {
	return p.submitTo(ctx, p.requests, req)
}

// submitTo hands a request to the next free process serving ch.
func (p *Pool) submitTo(ctx context.Context, ch chan *request, req *request) error {
	if !p.started.Load() {
		return errors.New("phppool: called before Start")
	}
	select {
	case ch <- req:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-p.stopping:
		return ErrStopped
	case <-p.gaveUp:
		return p.err
	}
	return <-req.reply
}

// Stop lets running jobs finish, then closes every process's stdin (its
// loop then exits) and kills those still there after Config.StopGrace. If
// ctx ends first, every process is killed at once; jobs still running
// fail as crashed.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		close(p.stopping)
		done := make(chan struct{})
		go func() {
			p.slotsWG.Wait()
			p.retireWG.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			p.log.Warn("PHP pool stop interrupted; killing every PHP worker")
			p.endLife()
			p.killAll()
			<-done
			p.stopErr = ctx.Err()
		}
		p.endLife()
		p.log.Info("PHP pool stopped")
	})
	return p.stopErr
}

// GaveUp is closed when the pool stopped replacing crashed processes
// (Config.MaxCrashes within Config.CrashWindow); Err then says why. The
// daemon should exit: its supervisor restarts it, loudly.
func (p *Pool) GaveUp() <-chan struct{} { return p.gaveUp }

// Err is the reason the pool gave up, or nil.
func (p *Pool) Err() error {
	select {
	case <-p.gaveUp:
		return p.err
	default:
		return nil
	}
}

// Stats is a snapshot of the pool.
type Stats struct {
	// PIDs of the processes in their slots (0: being replaced).
	PIDs []int
	// Busy slots.
	Busy int
	// Jobs run, processes that crashed, were killed because their job's
	// context ended, were recycled, and were started (first ones included).
	Jobs, Crashes, Kills, Recycles, Spawns int
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{
		Jobs: p.stats.jobs, Crashes: p.stats.crashes, Kills: p.stats.kills,
		Recycles: p.stats.recycles, Spawns: p.stats.spawns,
	}
	for _, s := range p.slots {
		st.PIDs = append(st.PIDs, s.pid)
		if s.busy {
			st.Busy++
		}
	}
	return st
}

// countErrors counts the failed starts: they usually share one cause, so
// the first stands for all.
func countErrors(errs []error) (int, error) {
	n, first := 0, error(nil)
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return n, first
}

func (p *Pool) killAll() {
	p.mu.Lock()
	procs := make([]*process, 0, len(p.procs))
	for proc := range p.procs {
		procs = append(procs, proc)
	}
	p.mu.Unlock()
	for _, proc := range procs {
		proc.kill()
	}
}
