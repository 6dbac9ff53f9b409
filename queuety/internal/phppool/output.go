package phppool

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// maxLogLine cuts runaway lines (a dumped binary, a giant var_dump) so one
// echo cannot flood the daemon's log with a single multi-megabyte entry.
const maxLogLine = 8 << 10

// tailLines is how many recent output lines a process keeps to explain
// its death: they usually hold PHP's "Fatal error: ..." line.
const tailLines = 5

// outputTail keeps the last lines a process printed, on either stream.
type outputTail struct {
	mu    sync.Mutex
	lines []string
}

func (t *outputTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, line)
}

// String is the kept lines, oldest first, newline-separated.
func (t *outputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// last is the most recent line, or "".
func (t *outputTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return t.lines[len(t.lines)-1]
}

// lineLogger is an io.Writer for a child's stdout or stderr that logs each
// complete line as one record. os/exec feeds it from a single goroutine per
// stream; Close (after the process exited) logs a last unterminated line.
type lineLogger struct {
	log    *slog.Logger
	stream string
	tail   *outputTail
	lines  *atomic.Int64
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > maxLogLine {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
	if len(l.buf) == 0 {
		l.buf = nil // let a large drained buffer go
	}
	return len(p), nil
}

func (l *lineLogger) emit(b []byte) {
	line := strings.TrimRight(string(b), "\r")
	if len(line) > maxLogLine {
		line = line[:maxLogLine] + "…"
	}
	if strings.TrimSpace(line) == "" {
		return
	}
	l.tail.add(line)
	l.lines.Add(1)
	l.log.Info("php output", "stream", l.stream, "line", line)
}

// flush logs what is left without a newline.
func (l *lineLogger) flush() {
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}
