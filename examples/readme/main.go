// Command readme is a binary of your own: the queuety command line with
// your Go handlers. `readme work --dsn …` runs them; `QUEUETY_DSN=…
// readme order 3` dispatches an order workflow.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "order" {
		if err := order(os.Args[2], os.Getenv("QUEUETY_DSN")); err != nil {
			fmt.Fprintln(os.Stderr, "readme:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(cli.Main(os.Args, cli.Options{Registry: Registry()}))
}

// Registry holds the application's Go handlers.
func Registry() *queuety.Registry {
	reg := queuety.NewRegistry()
	// A job, as PHP's Queuety::dispatch(SendEmail::class, ['to' => …]) writes it.
	reg.Register(`App\Jobs\SendEmail`, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		To string `json:"to"`
	}) error {
		if p.To == "" {
			return errors.New("no recipient") // retried, then buried
		}
		return nil
	}), queuety.WithMaxAttempts(5), queuety.WithBackoff(queuety.Backoff{List: []int{10, 60, 300}}))

	// A workflow step: reads the state, returns output merged into it.
	reg.RegisterStep(`App\Steps\PlaceOrder`, func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		qty, _ := s.Get("qty")
		n, _ := qty.AsInt64()
		return phpjson.NewObject().Set("order_id", phpjson.String("o-1")).Set("total", phpjson.Int(n*12)), nil
	})

	// A local activity: run at once by the worker that committed the step before.
	reg.RegisterLocalActivity(`App\Activities\SendReceipt`, func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		_ = queuety.LocalActivityHeartbeat(ctx, map[string]any{"message": "sending"})
		return phpjson.NewObject().Set("receipt", phpjson.String("r-1")), nil
	})
	return reg
}

// DispatchOrder builds the order workflow for qty items and dispatches it
// through d (a *queuety.Client, or queuetytest's recorder in a test).
func DispatchOrder(ctx context.Context, d queuety.Dispatcher, qty int64) (int64, error) {
	wf, err := workflow.New("order").Then(`App\Steps\PlaceOrder`).
		LocalActivity(`App\Activities\SendReceipt`, workflow.LocalActivityOptions{
			MaxAttempts: 3, StartToCloseTimeout: 10, ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5,
		}).
		Build(phpjson.NewObject().Set("qty", phpjson.Int(qty)))
	if err != nil {
		return 0, err
	}
	id, _, err := d.DispatchWorkflow(ctx, wf)
	return id, err
}

func order(qty, dsn string) error {
	n, err := strconv.ParseInt(qty, 10, 64)
	if err != nil {
		return err
	}
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := DispatchOrder(ctx, c, n)
	fmt.Println("workflow", id)
	return err
}
