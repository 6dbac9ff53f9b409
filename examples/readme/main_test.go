package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/queuety-go/queuety/examples/internal/exampledb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
)

// The README's program, run as a user's module runs it: dispatch a job,
// dispatch the order workflow with the built binary's `order 3`, start a
// worker with the registry, and read back the workflow's state with the
// step's and the local activity's output.
func TestReadmeProgram(t *testing.T) {
	ctx := context.Background()
	dsn := exampledb.New(t)
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, Workflows: true, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	job, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"})
	if err != nil {
		t.Fatal(err)
	}
	id := runOrder(t, dsn, "3")
	w, err := c.NewWorker(Registry())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := c.WorkflowStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == "completed" {
			b, err := phpjson.Encode(st.State)
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"qty":3,"order_id":"o-1","total":36,"receipt":"r-1"}`; string(b) != want {
				t.Fatalf("state = %s, want %s", b, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %d still %s", id, st.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	j, err := c.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "completed" {
		t.Fatalf("job %d is %s", job.ID, j.Status)
	}
}

// runOrder builds the program and runs `readme order qty` on dsn's
// database, returning the workflow id it printed.
func runOrder(t *testing.T, dsn, qty string) int64 {
	t.Helper()
	bin := t.TempDir() + "/readme"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "order", qty)
	cmd.Env = append(os.Environ(), "QUEUETY_DSN="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readme order %s: %v\n%s", qty, err, stderr.Bytes())
	}
	var id int64
	if _, err := fmt.Sscanf(string(out), "workflow %d\n", &id); err != nil {
		t.Fatalf("readme order printed %q: %v", out, err)
	}
	return id
}
