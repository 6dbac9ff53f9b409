// Package testbin gives tests that run the stock binary as a subprocess
// what they share: the binary, built once per test process, and a buffer
// its output can be copied into while the test reads it.
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Queuety builds cmd/queuety on first use and returns its path. Call
// Cleanup from TestMain once the tests are done. When QUEUETY_BIN names a
// binary (scripts/test.sh builds one for the whole run), that one is used:
// each test package would otherwise link its own.
func Queuety() (string, error) {
	once.Do(func() {
		var ok bool
		if path, ok, err = prebuilt(); ok {
			return
		}
		if dir, err = os.MkdirTemp("", "queuety-bin-"); err != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		path = filepath.Join(dir, "queuety")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/queuety")
		cmd.Dir = root
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build ./cmd/queuety: %v\n%s", berr, out)
		}
	})
	return path, err
}

// prebuilt is the binary QUEUETY_BIN names, if it is set.
func prebuilt() (string, bool, error) {
	p := os.Getenv("QUEUETY_BIN")
	if p == "" {
		return "", false, nil
	}
	if _, err := os.Stat(p); err != nil {
		return p, true, fmt.Errorf("QUEUETY_BIN: %w", err)
	}
	return p, true, nil
}

// Cleanup removes the built binary, if any.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// SyncBuffer is a bytes.Buffer safe for os/exec's copying goroutine (or a
// worker's logger) and the test reading it at the same time.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
