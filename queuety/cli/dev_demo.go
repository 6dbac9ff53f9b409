package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/workflow"
)

// The workflow demo of `queuety dev`, modelled on the plugin's
// documentation of workflow dependencies and agent orchestration: a
// research run, an editorial run that waits for it and then for an
// approval, a legal review, three syntheses waiting on them with All, Any
// and Quorum, a brief that starts three agents and waits for a quorum of
// two (one agent fails on purpose), a quote lookup run as a local
// activity, and a job bound to a worker session.

// registerDemo registers the Go steps the demo workflows run.
func registerDemo(reg *queuety.Registry) {
	step := func(class string, pause time.Duration, out func(*workflow.State) map[string]any) {
		reg.RegisterStep(class, func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
			if err := sleepCtx(ctx, pause); err != nil {
				return nil, err
			}
			return demoObject(out(s))
		})
	}
	step("PlanResearchStep", 300*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"tasks": []any{"market size", "competitors", "pricing"}}
	})
	reg.RegisterItemStep("ExecuteResearchTask", func(ctx context.Context, _ *workflow.State, item phpjson.Value, index int64) (*phpjson.Object, error) {
		if err := sleepCtx(ctx, 400*time.Millisecond); err != nil {
			return nil, err
		}
		topic, _ := item.AsString()
		return demoObject(map[string]any{"topic": topic, "finding": fmt.Sprintf("finding #%d about %s", index+1, topic)})
	})
	step("DraftBriefStep", 300*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"draft": "Three findings, one recommendation."}
	})
	step("LegalReviewStep", 500*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"legal": "cleared"}
	})
	step("PublishPacketStep", 200*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"published": true}
	})
	step("PlanTopicsStep", 200*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"agent_tasks": []any{
			map[string]any{"topic": "battery chemistry"}, map[string]any{"topic": "supply chain"}, map[string]any{"topic": "flaky source"},
		}}
	})
	reg.RegisterStep("ResearchTopicStep", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
		topic := ""
		if v, ok := s.Get("topic"); ok {
			topic, _ = v.AsString()
		}
		if topic == "flaky source" {
			return nil, errors.New("demo failure: the source timed out")
		}
		return demoObject(map[string]any{"summary": "what we know about " + topic})
	})
	step("SynthesizeBriefStep", 200*time.Millisecond, func(*workflow.State) map[string]any {
		return map[string]any{"brief": "synthesized from a quorum of agents"}
	})
	reg.RegisterLocalActivity("FetchQuotesActivity", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
		return demoObject(map[string]any{"quotes": []any{map[string]any{"symbol": "QTY", "price": 42.5}}})
	})
}

// dispatchDemoWorkflows dispatches the demo's workflows and its
// session-bound job on queue, returning how many workflows it started.
func dispatchDemoWorkflows(ctx context.Context, client *queuety.Client, queue string) (int, error) {
	n := 0
	dispatch := func(b *workflow.Builder, initial map[string]any) (int64, error) {
		o, err := demoObject(initial)
		if err != nil {
			return 0, err
		}
		d, err := b.OnQueue(queue).Build(o)
		if err != nil {
			return 0, fmt.Errorf("demo workflow %s: %w", b.Name(), err)
		}
		id, _, err := client.DispatchWorkflow(ctx, d)
		if err != nil {
			return 0, fmt.Errorf("demo workflow %s: %w", b.Name(), err)
		}
		n++
		return id, nil
	}
	research, err := dispatch(workflow.New("research_run").Then("PlanResearchStep").
		ForEach("tasks", "ExecuteResearchTask", workflow.ResultKey("results")), map[string]any{"brief_id": 42})
	if err != nil {
		return n, err
	}
	editorial, err := dispatch(workflow.New("editorial_run").
		WaitForWorkflow(workflow.WorkflowIDs(research), workflow.ResultKey("research")).
		Then("DraftBriefStep").WaitForApproval().Then("PublishPacketStep"), nil)
	if err != nil {
		return n, err
	}
	legal, err := dispatch(workflow.New("legal_review").Then("LegalReviewStep"), nil)
	if err != nil {
		return n, err
	}
	// The editorial run waits for an approval (give it on the dashboard),
	// so only Any and Quorum count it; All waits for the other two.
	for _, s := range []struct {
		name string
		ids  []int64
		opts []workflow.WorkflowWaitOption
	}{
		{"synthesis_all", []int64{research, legal}, []workflow.WorkflowWaitOption{workflow.WaitAll}},
		{"synthesis_any", []int64{research, editorial, legal}, []workflow.WorkflowWaitOption{workflow.WaitAny}},
		{"synthesis_quorum", []int64{research, editorial, legal}, []workflow.WorkflowWaitOption{workflow.WaitQuorum, workflow.Quorum(2)}},
	} {
		opts := append(s.opts, workflow.ResultKey("dependencies"))
		if _, err := dispatch(workflow.New(s.name).WaitForWorkflows(workflow.WorkflowIDs(s.ids...), opts...).Then("PublishPacketStep"), nil); err != nil {
			return n, err
		}
	}
	agent := workflow.New("agent_task").MaxAttempts(1).Then("ResearchTopicStep")
	if _, err := dispatch(workflow.New("brief_research").Then("PlanTopicsStep").
		StartAgents("agent_tasks", agent, workflow.GroupKey("researchers")).
		WaitForAgentGroup("researchers", workflow.WaitQuorum, workflow.Quorum(2), workflow.ResultKey("agent_results")).
		Then("SynthesizeBriefStep"), map[string]any{"brief_id": 7}); err != nil {
		return n, err
	}
	if _, err := dispatch(workflow.New("quote_lookup").
		LocalActivity("FetchQuotesActivity", workflow.LocalActivityOptions{MaxAttempts: 2}).
		Then("PublishPacketStep"), nil); err != nil {
		return n, err
	}
	if _, err := client.Dispatch(ctx, builtins.Sleep, map[string]any{"ms": 300, "demo": "session"},
		queuety.OnQueue(queue), queuety.InWorkerSession("demo-render", workflow.WorkerSessionOptions{Queue: queue})); err != nil {
		return n, fmt.Errorf("demo session job: %w", err)
	}
	return n, nil
}

func demoObject(m map[string]any) (*phpjson.Object, error) {
	if m == nil {
		return phpjson.NewObject(), nil
	}
	v, err := phpjson.FromGo(m)
	if err != nil {
		return nil, err
	}
	o, _ := v.AsObject()
	return o, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
