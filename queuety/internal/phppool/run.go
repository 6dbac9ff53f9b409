package phppool

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/queuety"
)

// exitLinger is how long frames a dead process wrote may take to arrive.
const exitLinger = 500 * time.Millisecond

// memoryPoll is how often a running job's process has its resident memory
// read (a few microseconds a read). A job allocating as fast as PHP can
// (about 2 GB/s filling a string) passes the limit by at most a few
// hundred MiB before it is killed.
const memoryPoll = 20 * time.Millisecond

// outcome is one job's end as the slot sees it.
type outcome struct {
	err    error
	alive  bool  // the process can take another job
	crash  bool  // it died or broke the protocol on its own (not killed for ctx)
	memory int64 // bytes the process reported after the job
	// notSent: the process was dead before the request reached it; the
	// job never started.
	notSent bool
	// output is what a workflow step returned (its result's "output").
	output []byte
}

// run sends one job and waits for its result, relaying heartbeats. When
// ctx ends first the process is killed: a PHP handler cannot be stopped
// safely mid-call, and a fresh process is cheap.
func (p *process) run(ctx context.Context, req *request) outcome {
	p.seq++
	seq := p.seq
	job := req.job
	jobID, handler := req.id()
	var frame []byte
	var err error
	if req.step != nil {
		frame, err = encodeStep(seq, req.step)
	} else {
		frame, err = encodeRun(seq, job)
	}
	if err != nil {
		return outcome{err: fmt.Errorf("encoding job %d for PHP: %w", jobID, err), alive: true}
	}
	p.jobs++
	linesBefore := p.lines.Load()
	if sent, o := p.send(ctx, frame); !sent {
		p.jobs--
		return o
	}
	var relay *heartbeatRelay
	var lost <-chan struct{}
	defer func() {
		if relay != nil {
			relay.stop()
		}
	}()
	// Normally the process's death closes fd 3 and msgs ends, but a child
	// it started (shell_exec("x &")) may hold fd 3 open: then its exit is
	// the sign, after a moment for frames already written.
	exited := p.exited
	var lingering <-chan time.Time
	var memTick <-chan time.Time
	if p.memLimit > 0 && rssWatched {
		t := time.NewTicker(memoryPoll)
		defer t.Stop()
		memTick = t.C
	}
	for {
		select {
		case <-memTick:
			if n, ok := rss(p.pid); ok && n > p.memLimit {
				p.kill()
				p.waitExit()
				// In whole MiB rounded up: a process a few KiB over a 256 MiB
				// limit used 257, not the "256 MiB, over the limit of 256"
				// that rounding down printed.
				used := (n + 1<<20 - 1) >> 20
				msg := fmt.Sprintf("PHP worker %d used %d MiB of memory during the job, over the limit of %d MiB (--php-memory-limit), and was killed",
					p.pid, used, p.memLimit>>20)
				p.log.Warn("killed PHP worker: over its memory limit", "job", jobID, "handler", handler, "rss_mib", used, "limit_mib", p.memLimit>>20)
				return outcome{err: &Error{Class: ClassMemoryLimit, Message: msg, Trace: p.outputTrace()}}
			}
		case <-exited:
			exited, lingering = nil, time.After(exitLinger)
		case <-lingering:
			p.kill()
			return p.crashed(linesBefore)
		case m, ok := <-p.msgs:
			if !ok {
				return p.crashed(linesBefore)
			}
			switch {
			case m.Type == "heartbeat" && m.Seq == seq:
				v, err := progressValue(m.Progress)
				if err != nil {
					return p.protocolError(fmt.Sprintf("heartbeat progress: %v", err))
				}
				if relay == nil {
					beat := queuety.StepHeartbeat // a workflow step: the worker put its attempt in ctx
					if job != nil {
						beat = job.Heartbeat
					}
					relay = startRelay(ctx, beat, jobID, p.log)
					lost = relay.lost
				}
				relay.push(v)
			case m.Type == "result" && m.Seq == seq:
				o := outcome{alive: true, memory: m.Memory}
				if job != nil {
					job.ReportMemoryPeak(m.PeakKB)
				}
				if m.OK && req.step != nil {
					o.output = m.Output
				}
				if !m.OK {
					e := m.Error
					if e == nil {
						e = &phpError{Class: ClassProtocolError, Message: "the PHP worker reported a failure without an error"}
					}
					o.err = &Error{Class: e.Class, Message: e.Message, Trace: e.Trace, Retry: m.Retry}
				}
				return o
			default:
				return p.protocolError(fmt.Sprintf("unexpected %q frame for seq %d while running seq %d", m.Type, m.Seq, seq))
			}
		case <-ctx.Done():
			p.kill()
			p.waitExit()
			p.log.Info("killed PHP worker: its job's context ended", "job", jobID, "handler", handler, "cause", context.Cause(ctx))
			return outcome{err: context.Cause(ctx)}
		case <-lost:
			// Tell PHP nothing: the row is gone, the result would be refused.
			p.kill()
			p.waitExit()
			return outcome{err: queuety.ErrJobLost}
		}
	}
}

// pipeRoom is what a pipe holds without a reader (Linux: 64 KiB). With
// one request in flight the pipe is empty when a request is written, so a
// smaller frame never blocks.
const pipeRoom = 60 << 10

// send writes a request. A large one may block until PHP reads it, which
// a dead worker's child holding its stdin would never do, so it is written
// aside and ctx still kills the process. sent is false when the request
// did not reach a live process: o is then the outcome to report.
func (p *process) send(ctx context.Context, frame []byte) (sent bool, o outcome) {
	if len(frame) < pipeRoom {
		if err := writeFrame(p.stdin, frame); err != nil {
			return false, outcome{notSent: true}
		}
		return true, outcome{}
	}
	done := make(chan error, 1)
	go func() { done <- writeFrame(p.stdin, frame) }()
	select {
	case err := <-done:
		if err != nil {
			return false, outcome{notSent: true}
		}
		return true, outcome{}
	case <-ctx.Done():
		p.kill()
		_ = p.stdin.Close() // unblocks the write whoever holds the pipe
		<-done
		p.waitExit()
		return false, outcome{err: context.Cause(ctx)}
	}
}

// crashed reports the process's death during a job (its response pipe
// closed, or its stdin broke) once it is reaped.
func (p *process) crashed(linesBefore int64) outcome {
	hung := p.waitExit()
	if err := p.badFrame(); err != nil {
		return p.protocolError(err.Error())
	}
	how := "exited during the job: " + p.exitDescription()
	if hung {
		how = "closed its response pipe during the job and was killed"
	}
	msg := fmt.Sprintf("PHP worker %d %s%s", p.pid, how, p.lastOutput(linesBefore))
	return outcome{err: &Error{Class: ClassWorkerCrashed, Message: msg, Trace: p.outputTrace()}, crash: true}
}

// protocolError kills a process that broke the protocol; its state is
// unknown, so it must not take another job.
func (p *process) protocolError(what string) outcome {
	p.kill()
	p.waitExit()
	msg := fmt.Sprintf("PHP worker %d broke the protocol (%s) and was killed", p.pid, what)
	return outcome{err: &Error{Class: ClassProtocolError, Message: msg, Trace: p.outputTrace()}, crash: true}
}
