package queuety_test

import (
	"context"
	"fmt"
	"log"
	"os/signal"
	"syscall"
	"time"

	"github.com/queuety-go/queuety/queuety"
)

// A worker process with one Go handler. Jobs of other handlers stay in the
// queue for PHP workers.
func Example() {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{
		DSN:         "root@tcp(127.0.0.1:3306)/wordpress",
		Queues:      []string{"mail", "default"},
		Concurrency: 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	reg := queuety.NewRegistry()
	reg.Register(`App\Jobs\SendEmail`, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		To string `json:"to"`
	}) error {
		fmt.Println("sending to", p.To, "attempt", j.Attempt)
		return nil
	}), queuety.WithMaxAttempts(5), queuety.WithBackoff(queuety.Backoff{List: []int{10, 60, 300}}))

	w, err := c.NewWorker(reg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil { // returns after SIGTERM and a graceful stop
		log.Fatal(err)
	}
}

// Dispatching from Go writes the row PHP's Queue::dispatch would.
func ExampleClient_Dispatch() {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: "root@tcp(127.0.0.1:3306)/wordpress"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	d, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"},
		queuety.OnQueue("mail"), queuety.WithPriority(queuety.PriorityHigh),
		queuety.Delay(30*time.Second), queuety.Unique())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", d.ID, "existing:", d.Existing)
}

// A handler reports progress and notices when it must stop.
func ExampleJob_Heartbeat() {
	reg := queuety.NewRegistry()
	reg.HandleFunc("import_rows", func(ctx context.Context, j *queuety.Job) error {
		for done := 0; done < 1000; done += 100 {
			if err := j.Heartbeat(ctx, map[string]int{"processed": done, "total": 1000}); err != nil {
				return err // queuety.ErrJobLost: another worker owns the job now
			}
		}
		return ctx.Err()
	})
}
