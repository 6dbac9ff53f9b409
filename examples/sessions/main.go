// Command sessions dispatches a video render whose middle steps are bound
// to one worker session, so the worker holding the GPU runs them all.
// QUEUETY_DSN names the database.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

func main() {
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: os.Getenv("QUEUETY_DSN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessions:", err)
		os.Exit(1)
	}
	defer c.Close()
	id, err := DispatchRender(ctx, c, "intro.mp4")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessions:", err)
		os.Exit(1)
	}
	fmt.Println("workflow", id)
}

// DispatchRender builds the render of video and dispatches it through d.
func DispatchRender(ctx context.Context, d queuety.Dispatcher, video string) (int64, error) {
	b := workflow.New("render-video").Then("Plan")
	b.WorkerSession("gpu-render", workflow.WorkerSessionOptions{
		Queue: "gpu-activities", Requirements: []string{"gpu:nvidia-l4"},
		LeaseSeconds: 120, TTLSeconds: 1800, MaxConcurrentActivities: 1,
	}).Then("RenderFrames").Then("AssembleManifest")
	b.Then("Publish")
	wf, err := b.Build(phpjson.NewObject().Set("video", phpjson.String(video)))
	if err != nil {
		return 0, err
	}
	id, _, err := d.DispatchWorkflow(ctx, wf)
	return id, err
}
