package phppool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// exitWait bounds how long a process that closed its response pipe, or
// was killed, may take to be reaped before we stop waiting for it.
const exitWait = 2 * time.Second

// process is one PHP worker. Only its slot goroutine calls run, kill and
// retire; the reader, waiter and output goroutines only hand data over.
type process struct {
	pid   int
	php   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	resp  *os.File
	log   *slog.Logger
	tail  outputTail
	lines atomic.Int64 // output lines so far, to tell whether a job printed any

	msgs    chan message // frames from fd 3; closed on EOF or a bad frame
	readMu  sync.Mutex
	readErr error // why msgs closed

	exited  chan struct{} // closed once reaped and its output drained
	exitErr error         // written before exited is closed

	closed    chan struct{} // the pool is done with it: the reader stops delivering
	closeOnce sync.Once

	seq  uint64 // last request's sequence number
	jobs int    // jobs run, for recycling

	memLimit int64 // bytes of VmRSS past which a job is stopped; 0: none
}

// spawn starts a PHP worker and waits for its ready frame.
func spawn(ctx context.Context, cfg Config, log *slog.Logger) (*process, error) {
	respR, respW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(respR, respW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(respR, respW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.ExtraFiles = []*os.File{respW} // the child's fd 3
	cmd.Stdout, cmd.Stderr = outW, errW
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		closeAll(respR, respW, outR, outW, errR, errW)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		closeAll(respR, respW, outR, outW, errR, errW)
		return nil, fmt.Errorf("starting PHP worker %q: %w", cfg.Command[0], err)
	}
	// The child has its copies; ours must go, or EOF never comes.
	closeAll(respW, outW, errW)

	p := &process{
		pid: cmd.Process.Pid, cmd: cmd, stdin: stdin, resp: respR,
		msgs: make(chan message), exited: make(chan struct{}), closed: make(chan struct{}),
	}
	if cfg.MemoryLimitMB > 0 {
		p.memLimit = int64(cfg.MemoryLimitMB) << 20
	}
	p.log = log.With("php_pid", p.pid)
	var copiers sync.WaitGroup
	for _, s := range []struct {
		name string
		r    *os.File
	}{{"stdout", outR}, {"stderr", errR}} {
		copiers.Add(1)
		go p.copyOutput(&copiers, s.r, &lineLogger{log: p.log, stream: s.name, tail: &p.tail, lines: &p.lines})
	}
	go p.readFrames()
	go p.wait(&copiers)

	if err := p.awaitReady(ctx, cfg.StartTimeout); err != nil {
		p.kill()
		p.waitExit()
		p.close()
		return nil, err
	}
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

func (p *process) copyOutput(wg *sync.WaitGroup, r *os.File, l *lineLogger) {
	defer wg.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = l.Write(buf[:n])
		}
		if err != nil {
			l.flush()
			return
		}
	}
}

// wait reaps the process. Its output is drained first (briefly: a
// grandchild may hold the pipes open), so a crash report sees the last
// lines, such as PHP's fatal error.
func (p *process) wait(copiers *sync.WaitGroup) {
	err := p.cmd.Wait()
	// Whatever it started goes with it (a pcntl_fork child, a shell's
	// background job): they are in its process group, whose id stays
	// reserved while any member lives (once none does, the kill finds
	// nothing: pids are handed out in sequence, not reused at once). A child that left the group (setsid) is beyond this; the
	// service unit's cgroup (KillMode=control-group) ends those.
	killGroup(p.pid)
	drained := make(chan struct{})
	go func() { copiers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
	}
	p.exitErr = err
	close(p.exited)
}

// readFrames delivers fd 3's frames until EOF, a bad frame, or close.
func (p *process) readFrames() {
	defer close(p.msgs)
	br := bufio.NewReaderSize(p.resp, 64<<10)
	for {
		body, err := readFrame(br)
		if err != nil {
			p.setReadErr(err)
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			p.setReadErr(fmt.Errorf("frame is not a JSON object: %w", err))
			return
		}
		select {
		case p.msgs <- m:
		case <-p.closed:
			p.setReadErr(io.EOF)
			return
		}
	}
}

func (p *process) setReadErr(err error) {
	p.readMu.Lock()
	p.readErr = err
	p.readMu.Unlock()
}

// badFrame is the reader's error if the process broke the framing (not a
// mere end of stream), else nil.
func (p *process) badFrame() error {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	if p.readErr == nil || errors.Is(p.readErr, io.EOF) || errors.Is(p.readErr, io.ErrUnexpectedEOF) {
		return nil
	}
	return p.readErr
}

func (p *process) awaitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			if err := p.badFrame(); err != nil {
				return fmt.Errorf("PHP worker %d sent a bad first frame (%v): is the command the queuety-php-worker script?", p.pid, err)
			}
			p.waitExit()
			return fmt.Errorf("PHP worker %d exited before it was ready: %s%s", p.pid, p.exitDescription(), p.allOutput())
		}
		if m.Type != "ready" {
			return fmt.Errorf("PHP worker %d sent a %q frame before ready: is the command the queuety-php-worker script?", p.pid, m.Type)
		}
		if m.Protocol != protocolVersion {
			return fmt.Errorf("PHP worker %d speaks protocol %d, this daemon %d: use the php-bridge that ships with this queuety", p.pid, m.Protocol, protocolVersion)
		}
		p.php = m.PHP
		p.log.Debug("PHP worker ready", "php", m.PHP, "reported_pid", m.PID)
		return nil
	case <-t.C:
		return fmt.Errorf("PHP worker %d did not become ready within %s (a slow or hanging bootstrap?)%s", p.pid, timeout, p.allOutput())
	case <-ctx.Done():
		return fmt.Errorf("PHP worker %d: %w", p.pid, context.Cause(ctx))
	}
}

// exitDescription is how the process ended, as os/exec words it:
// "exit status 3", "signal: segmentation fault".
func (p *process) exitDescription() string {
	select {
	case <-p.exited:
	default:
		return "it could not be reaped"
	}
	if p.exitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.Error()
	}
	return p.exitErr.Error()
}

// outputTrace is logs.error_trace for a crash: the process's last lines.
func (p *process) outputTrace() string {
	if out := p.tail.String(); out != "" {
		return fmt.Sprintf("last output of PHP worker %d:\n%s", p.pid, out)
	}
	return fmt.Sprintf("PHP worker %d printed nothing", p.pid)
}

// allOutput quotes the kept lines, for a process that failed to start:
// PHP's fatal error spans several.
func (p *process) allOutput() string {
	if out := p.tail.String(); out != "" {
		return "; its last output:\n" + out
	}
	return ""
}

// lastOutput quotes the last line printed after the first `since` lines,
// for error messages ("" if there is none).
func (p *process) lastOutput(since int64) string {
	if p.lines.Load() <= since {
		return ""
	}
	if l := p.tail.last(); l != "" {
		return fmt.Sprintf(" (last output: %s)", l)
	}
	return ""
}

// kill ends the process and anything it started (its process group).
func (p *process) kill() {
	killProcess(p.cmd)
}

// waitExit waits for the process to be reaped, killing it if it takes
// longer than exitWait; it reports whether it had to kill it.
func (p *process) waitExit() (killed bool) {
	select {
	case <-p.exited:
		return false
	case <-time.After(exitWait):
	}
	p.kill()
	select {
	case <-p.exited:
	case <-time.After(exitWait):
		p.log.Error("PHP worker did not die after SIGKILL; abandoning it")
	}
	return true
}

// retire asks the process to exit (stdin closed ends its loop), then
// kills it after grace.
func (p *process) retire(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.log.Warn("PHP worker did not exit after its stdin closed; killing it", "grace", grace)
		p.kill()
		p.waitExit()
	}
	p.close()
}

// close releases the process's pipes once the pool is done with it.
func (p *process) close() {
	p.closeOnce.Do(func() {
		close(p.closed)
		_ = p.stdin.Close()
		_ = p.resp.Close()
	})
}
