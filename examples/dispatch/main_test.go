package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/queuety-go/queuety/examples/internal/exampledb"
	"github.com/queuety-go/queuety/queuety"
)

// The program, run twice on a migrated database: one job on queue mail at
// high priority, and Unique finds it the second time.
func TestDispatchProgram(t *testing.T) {
	dsn := exampledb.New(t)
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir() + "/dispatch"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, want := range []string{"job 1 existing: false\n", "job 1 existing: true\n"} {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "QUEUETY_DSN="+dsn)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Fatalf("dispatch printed %q (%v, %s), want %q", out, err, stderr.Bytes(), want)
		}
	}
	j, err := c.Job(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if j.Queue != "mail" || j.Priority != int(queuety.PriorityHigh) || j.Payload != `{"to":"a@b.c"}` {
		t.Fatalf("job = %+v", j)
	}
}
