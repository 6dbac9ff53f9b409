package phppool

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/workflow"
)

// Restart backoff after consecutive crashes of one slot: the first restart
// is immediate (one job's segfault should not slow the queue), then 100 ms
// doubling up to maxRestartDelay.
const (
	firstRestartDelay = 100 * time.Millisecond
	maxRestartDelay   = 10 * time.Second
)

func restartDelay(consecutive int) time.Duration {
	if consecutive <= 1 {
		return 0
	}
	d := firstRestartDelay << min(consecutive-2, 10)
	return min(d, maxRestartDelay)
}

// serve is a slot's goroutine: it takes requests while its process lives,
// and replaces the process when it crashes, is killed, or is due for
// recycling. A request that meets a process already dead (it died idle)
// is kept for the replacement: the job never started, so nothing is lost
// by running it there.
//
// pending, when set, is a request taken before the process was started
// (the metadata lane's first).
func (p *Pool) serve(s *slot, proc *process, requests <-chan *request, pending *request) {
	defer p.slotsWG.Done()
	for {
		if proc == nil {
			if proc = p.respawn(s); proc == nil {
				if pending != nil {
					pending.reply <- p.closedErr()
				}
				return
			}
		}
		req := pending
		pending = nil
		if req == nil {
			select {
			case req = <-requests:
			case <-proc.exited:
				p.diedIdle(s, proc)
				proc = nil
				continue
			case <-p.stopping:
				p.retire(proc)
				return
			case <-p.gaveUp:
				p.retire(proc)
				return
			}
		}
		if req.ctx.Err() != nil {
			req.reply <- context.Cause(req.ctx)
			continue
		}
		p.setBusy(s, true)
		// The attempt's time limit starts now that a process has the job
		// (the wait for a free one does not count: workflow/time_limit.go).
		rctx, cancel := workflow.StartTimeLimit(req.ctx)
		o := proc.run(rctx, req)
		cancel()
		if o.notSent {
			p.setBusy(s, false)
			p.diedIdle(s, proc)
			proc, pending = nil, req
			continue
		}
		// Counted before the reply, so Stats agrees with what the caller
		// saw; the replacement, if any, starts after it.
		proc = p.afterJob(s, proc, req, o)
		p.setBusy(s, false)
		req.output = o.output
		req.reply <- o.err
	}
}

// diedIdle reports a process found dead between jobs.
func (p *Pool) diedIdle(s *slot, proc *process) {
	proc.waitExit()
	p.crashed(s, proc, fmt.Errorf("PHP worker %d exited while idle: %s%s", proc.pid, proc.exitDescription(), proc.lastOutput(0)))
}

// retire ends a slot's process as the pool stops.
func (p *Pool) retire(proc *process) {
	proc.retire(p.cfg.StopGrace)
	p.forget(proc)
}

// closedErr is what a request gets once no process will take it.
func (p *Pool) closedErr() error {
	if err := p.Err(); err != nil {
		return err
	}
	return ErrStopped
}

// afterJob keeps the process, or lets it go (crashed, killed, recycled);
// it returns the process the slot keeps, or nil.
func (p *Pool) afterJob(s *slot, proc *process, req *request, o outcome) *process {
	p.mu.Lock()
	p.stats.jobs++
	p.mu.Unlock()
	switch {
	case o.crash:
		p.crashed(s, proc, o.err)
		return nil
	case !o.alive:
		p.mu.Lock()
		p.stats.kills++
		p.mu.Unlock()
		proc.close()
		p.forget(proc)
		return nil
	}
	s.consecutive = 0
	reason := ""
	switch {
	case proc.jobs >= p.cfg.MaxJobs:
		reason = fmt.Sprintf("ran %d jobs", proc.jobs)
	case o.memory > int64(p.cfg.MaxMemoryMB)<<20:
		reason = fmt.Sprintf("uses %d MiB, over %d MiB", o.memory>>20, p.cfg.MaxMemoryMB)
	default:
		return proc
	}
	proc.log.Info("recycling PHP worker", "reason", reason, "last_job", jobIDOf(req))
	p.mu.Lock()
	p.stats.recycles++
	p.mu.Unlock()
	p.retireWG.Add(1)
	go func() {
		defer p.retireWG.Done()
		p.retire(proc)
	}()
	return nil
}

// crashed lets a dead process go and counts the crash.
func (p *Pool) crashed(s *slot, proc *process, err error) {
	proc.close()
	p.forget(proc)
	p.noteCrash(s, err, "PHP worker crashed; replacing it")
}

// noteCrash counts a crash (or a failed start) and gives up when there
// were Config.MaxCrashes within Config.CrashWindow.
func (p *Pool) noteCrash(s *slot, err error, what string) {
	select {
	case <-p.stopping:
		// A forced Stop kills processes mid-job: not the application's fault.
		p.log.Debug("PHP worker ended while the pool stops", "err", err)
		return
	default:
	}
	s.consecutive++
	now := time.Now()
	p.mu.Lock()
	p.stats.crashes++
	kept := p.crashes[:0]
	for _, t := range p.crashes {
		if now.Sub(t) < p.cfg.CrashWindow {
			kept = append(kept, t)
		}
	}
	p.crashes = append(kept, now)
	giveUp := len(p.crashes) >= p.cfg.MaxCrashes && p.err == nil
	if giveUp {
		p.err = &GaveUpError{Crashes: len(p.crashes), Window: p.cfg.CrashWindow, Last: err}
	}
	p.mu.Unlock()
	if giveUp {
		p.log.Error("PHP pool giving up: workers keep crashing", "err", p.err)
		close(p.gaveUp)
		return
	}
	p.log.Warn(what, "err", err, "restart_in", restartDelay(s.consecutive))
}

// respawn starts the slot's next process after the crash backoff. It
// returns nil when the pool is stopping or gave up.
func (p *Pool) respawn(s *slot) *process {
	p.setPID(s, 0)
	for {
		if d := restartDelay(s.consecutive); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.stopping:
				t.Stop()
				return nil
			case <-p.gaveUp:
				t.Stop()
				return nil
			}
		}
		select {
		case <-p.stopping:
			return nil
		case <-p.gaveUp:
			return nil
		default:
		}
		proc, err := spawn(p.life, p.cfg, p.log)
		if err == nil {
			p.mu.Lock()
			p.procs[proc] = struct{}{}
			if !s.meta {
				p.stats.spawns++
			}
			s.pid = proc.pid
			p.mu.Unlock()
			return proc
		}
		if p.life.Err() != nil {
			return nil
		}
		p.noteCrash(s, err, "PHP worker failed to start; retrying")
	}
}

func (p *Pool) setBusy(s *slot, busy bool) {
	p.mu.Lock()
	s.busy = busy
	p.mu.Unlock()
}

func (p *Pool) setPID(s *slot, pid int) {
	p.mu.Lock()
	s.pid = pid
	p.mu.Unlock()
}

func (p *Pool) forget(proc *process) {
	p.mu.Lock()
	delete(p.procs, proc)
	p.mu.Unlock()
}
