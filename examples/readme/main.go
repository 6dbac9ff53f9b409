// Command readme is the README's own binary: a Go job handler, a workflow
// step that returns output, a local activity, and a workflow built and
// dispatched from Go, all outside the queuety-go module, as a user's
// application meets the API. `go run . work --workflows --dsn …` runs them;
// `go run . demo --dsn …` dispatches the workflow first.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

func main() {
	os.Exit(cli.Main(os.Args, cli.Options{Registry: Registry()}))
}

// Registry holds the application's handlers.
func Registry() *queuety.Registry {
	reg := queuety.NewRegistry()
	// A plain job, as PHP's Queuety::dispatch(SendEmail::class, ['to' => …]) writes it.
	reg.Register(`App\Jobs\SendEmail`, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		To string `json:"to"`
	}) error {
		if p.To == "" {
			return fmt.Errorf("no recipient")
		}
		return nil
	}), queuety.WithMaxAttempts(5), queuety.WithBackoff(queuety.Backoff{List: []int{10, 60, 300}}))

	// A workflow step: reads the state, returns output merged into it.
	reg.RegisterStep(`App\Steps\PlaceOrder`, func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		qty, _ := s.Object().Get("qty")
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

// Order builds the README's order workflow for qty items.
func Order(qty int64) (*workflow.Dispatch, error) {
	return workflow.New("order").Then(`App\Steps\PlaceOrder`).
		LocalActivity(`App\Activities\SendReceipt`, workflow.LocalActivityOptions{
			MaxAttempts: 3, StartToCloseTimeout: 10, ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5,
		}).
		Build(phpjson.NewObject().Set("qty", phpjson.Int(qty)))
}
