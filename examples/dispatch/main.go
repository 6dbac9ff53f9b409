// Command dispatch dispatches one job as Queuety's Queue::dispatch does.
// QUEUETY_DSN names the database.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/queuety-go/queuety/queuety"
)

func main() {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: os.Getenv("QUEUETY_DSN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dispatch:", err)
		os.Exit(1)
	}
	defer c.Close()
	d, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"},
		queuety.OnQueue("mail"), queuety.WithPriority(queuety.PriorityHigh), queuety.Unique())
	if err != nil {
		fmt.Fprintln(os.Stderr, "dispatch:", err)
		os.Exit(1)
	}
	fmt.Println("job", d.ID, "existing:", d.Existing)
}
