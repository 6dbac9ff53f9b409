package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
)

// newDatabase creates a database of its own on QUEUETY_TEST_DSN's server
// (default: the local MariaDB) and drops it after the test.
func newDatabase(t *testing.T) string {
	t.Helper()
	server := os.Getenv("QUEUETY_TEST_DSN")
	if server == "" {
		server = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "qt_examples_" + hex.EncodeToString(b)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a, err := sql.Open("mysql", cfg.FormatDSN()); err == nil {
			_, _ = a.Exec("DROP DATABASE " + name)
			a.Close()
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// The README's program, run as a user's module runs it: dispatch a job and
// the order workflow, start a worker with the registry, and read back the
// workflow's state with the step's and the local activity's output.
func TestReadmeProgram(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: newDatabase(t), Workflows: true, PollInterval: 10 * time.Millisecond})
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
	d, err := Order(3)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := c.DispatchWorkflow(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
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
