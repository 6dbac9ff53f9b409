package steps_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/steps"
	"github.com/queuety-go/queuety/internal/storetest"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// engineEnv is one test's database with the schema, a store and an engine
// running the fixtures' step classes.
type engineEnv struct {
	t   *testing.T
	ctx context.Context
	db  *sqlx.DB
	s   *store.Store
	e   *engine.Engine
}

func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	ctx := context.Background()
	s, db := storetest.New(t, nil, 8)
	return &engineEnv{t: t, ctx: ctx, db: db, s: s, e: engine.NewEngine(engine.EngineConfig{Store: s, Handlers: fixtureHandlers(t), Kinds: steps.All()})}
}

// errThrown is a PHP RuntimeException thrown by a fixture step.
type errThrown struct{ msg string }

func (e *errThrown) Error() string      { return e.msg }
func (e *errThrown) ErrorClass() string { return "RuntimeException" }

func intOf(v phpjson.Value) int64 {
	n, _ := v.AsInt64()
	return n
}

func obj(kv ...any) *phpjson.Object {
	o := phpjson.NewObject()
	for i := 0; i < len(kv); i += 2 {
		v, err := phpjson.FromGo(kv[i+1])
		if err != nil {
			panic(err)
		}
		o.Set(kv[i].(string), v)
	}
	return o
}

// fixtureHandlers are the PHP step classes of the recorded scenarios
// (shared/fixtures/README.md), in Go, under the same class names.
func fixtureHandlers(t *testing.T) *workflow.Handlers {
	h := workflow.NewHandlers()
	step := func(name string, fn workflow.StepFunc, meta workflow.HandlerMetadata) {
		require.NoError(t, h.Step(name, fn, meta))
	}
	step("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		return obj("n", intOf(n)+1), nil
	}, workflow.HandlerMetadata{})
	step("BranchA", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return obj("a", "from A", "shared", "A"), nil
	}, workflow.HandlerMetadata{})
	step("BranchB", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return obj("b", 2.5, "shared", "B"), nil
	}, workflow.HandlerMetadata{})
	step("PlanItems", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return obj("items", []any{"x", "y/z", "ü"}), nil
	}, workflow.HandlerMetadata{})
	step("DraftStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		r, _ := s.Get("round")
		round := intOf(r) + 1
		return obj("round", round, "approved", round >= 2), nil
	}, workflow.HandlerMetadata{})
	step("SummaryStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		label, _ := s.Get("label")
		l, _ := label.AsString()
		return obj("summary", "done "+l), nil
	}, workflow.HandlerMetadata{})
	step("FailingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, &errThrown{"step failed on purpose"}
	}, workflow.HandlerMetadata{MaxAttempts: 1})
	step("PlanResearchStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return obj("tasks", []any{map[string]any{"topic": "market"}, map[string]any{"topic": "legal"}}), nil
	}, workflow.HandlerMetadata{})
	step("DraftBriefStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		research, _ := s.Get("research")
		ro, _ := research.AsObject()
		var keys []phpjson.Value
		for _, k := range ro.Keys() {
			keys = append(keys, phpjson.String(k))
		}
		b, err := phpjson.Encode(phpjson.List(keys...))
		return obj("draft", "brief from "+string(b)), err
	}, workflow.HandlerMetadata{})
	step("PlanTopicsStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return obj("agent_tasks", []any{"pricing", "competitors", "regulation"}), nil
	}, workflow.HandlerMetadata{})
	step("ResearchTopicStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		task, _ := s.Get("agent_task")
		ts, _ := task.AsString()
		return obj("finding", "about "+ts), nil
	}, workflow.HandlerMetadata{})
	step("SynthesizeBriefStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		results, _ := s.Get("agent_results")
		ro, _ := results.AsObject()
		return obj("brief_parts", ro.Len()), nil
	}, workflow.HandlerMetadata{})
	require.NoError(t, h.Item("ExecuteResearchTask", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		io, _ := item.AsObject()
		topic, _ := io.Get("topic")
		ts, _ := topic.AsString()
		return obj("summary", "notes on "+ts), nil
	}, workflow.HandlerMetadata{}))
	require.NoError(t, h.Item("ItemStep", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		s, _ := item.AsString()
		if s == "ü" {
			return nil, &errThrown{"cannot handle ü"}
		}
		return obj("len", len(s), "item", s), nil
	}, workflow.HandlerMetadata{MaxAttempts: 1}))
	require.NoError(t, h.Reducer("SumReducer", func(_ context.Context, _ *phpjson.Object, agg *phpjson.Object, _ *phpjson.Object) (*phpjson.Object, error) {
		var total int64
		results, _ := agg.Get("results")
		list, _ := results.AsList()
		for _, r := range list {
			ro, _ := r.AsObject()
			out, _ := ro.Get("output")
			oo, _ := out.AsObject()
			l, _ := oo.Get("len")
			total += intOf(l)
		}
		return obj("total_len", total), nil
	}))
	return h
}

// decide retries until the job's max attempts (from the payload's
// __queuety_runtime, as the worker reads it), with no backoff.
func decide(job *store.JobRow, err error) engine.Failure {
	max := int64(job.MaxAttempts)
	if v, derr := phpjson.DecodeString(job.Payload); derr == nil {
		if o, ok := v.AsObject(); ok {
			if rt, ok := o.Get(workflow.RuntimePayloadKey); ok {
				if ro, ok := rt.AsObject(); ok {
					if m, ok := ro.Get("max_attempts"); ok {
						if n, ok := m.AsInt64(); ok && n > 0 {
							max = n
						}
					}
				}
			}
		}
	}
	class := "RuntimeException"
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		class = c.ErrorClass()
	}
	return engine.Failure{Message: err.Error(), Class: class, Trace: "#0 {main}", Terminal: int64(job.Attempts) >= max}
}

// runJob claims job id as a worker would and runs it through the engine.
func (env *engineEnv) runJob(id int64) error {
	env.t.Helper()
	job, ok, err := env.s.ClaimJobByID(env.ctx, id, "test-worker")
	require.NoError(env.t, err)
	require.True(env.t, ok, "job %d is not pending", id)
	stepErr, err := env.e.Run(env.ctx, job, decide)
	require.NoError(env.t, err)
	return stepErr
}

// pendingJobs lists the ids of pending jobs in claim order.
func (env *engineEnv) pendingJobs() []int64 {
	var ids []int64
	require.NoError(env.t, env.db.Select(&ids, "SELECT id FROM `"+env.s.Tables()["jobs"]+"` WHERE status = 'pending' ORDER BY priority DESC, id"))
	return ids
}

// drain runs pending jobs until none is left (at most limit).
func (env *engineEnv) drain(limit int) {
	env.t.Helper()
	for i := 0; i < limit; i++ {
		ids := env.pendingJobs()
		if len(ids) == 0 {
			return
		}
		_ = env.runJob(ids[0])
	}
	env.t.Fatalf("still jobs pending after %d runs", limit)
}

// runNext runs the next n pending jobs.
func (env *engineEnv) runNext(n int) {
	env.t.Helper()
	for i := 0; i < n; i++ {
		ids := env.pendingJobs()
		require.NotEmpty(env.t, ids, "no pending job to run")
		_ = env.runJob(ids[0])
	}
}

func (env *engineEnv) workflow(id int64) *store.WorkflowRow {
	env.t.Helper()
	wf, err := env.s.GetWorkflow(env.ctx, id)
	require.NoError(env.t, err)
	return wf
}

func (env *engineEnv) state(id int64) *workflow.State {
	env.t.Helper()
	s, err := workflow.ParseState([]byte(env.workflow(id).State))
	require.NoError(env.t, err)
	return s
}

func (env *engineEnv) dispatch(b *workflow.Builder, initial *phpjson.Object) int64 {
	env.t.Helper()
	d, err := b.Build(initial)
	require.NoError(env.t, err)
	id, _, err := env.e.Dispatch(env.ctx, d)
	require.NoError(env.t, err)
	return id
}

func (env *engineEnv) jobs(workflowID int64) []store.JobRow {
	var rows []store.JobRow
	require.NoError(env.t, env.db.Unsafe().Select(&rows, "SELECT * FROM `"+env.s.Tables()["jobs"]+"` WHERE workflow_id = ? ORDER BY id", workflowID))
	return rows
}

func (env *engineEnv) logEvents(workflowID int64) []string {
	var ev []string
	require.NoError(env.t, env.db.Select(&ev, "SELECT event FROM `"+env.s.Tables()["logs"]+"` WHERE workflow_id = ? ORDER BY id", workflowID))
	return ev
}

func (env *engineEnv) wfEvents(workflowID int64) []string {
	var ev []string
	require.NoError(env.t, env.db.Select(&ev, "SELECT event FROM `"+env.s.Tables()["workflow_events"]+"` WHERE workflow_id = ? ORDER BY id", workflowID))
	return ev
}

func (env *engineEnv) publicJSON(id int64) string {
	b, err := encodeObject(env.state(id).Public())
	require.NoError(env.t, err)
	return string(b)
}

// fixtureDir holds the plugin's recorded scenarios.
const fixtureDir = "../../testdata/queuety-plugin"

func itoa(i int) string { return strconv.Itoa(i) }

func decodeObject(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	v, err := phpjson.DecodeString(s)
	require.NoError(t, err)
	o, ok := v.AsObject()
	require.True(t, ok, "want an object, got %s", v.Kind())
	return o
}

func mustEncode(v phpjson.Value) []byte {
	b, err := phpjson.Encode(v)
	if err != nil {
		return []byte(v.Kind().String())
	}
	return b
}

// normalizeWorkflowIDs reads a list of workflow ids as the engine stores
// them (an int or a list of ints > 0, duplicates dropped).
func normalizeWorkflowIDs(v phpjson.Value) []int64 {
	if !phpjson.IsArray(v) {
		if id := phpjson.ToInt(v); id > 0 {
			return []int64{id}
		}
		return nil
	}
	var ids []int64
	seen := map[int64]bool{}
	for _, e := range phpjson.Values(v) {
		if id := phpjson.ToInt(e); id > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// pendingOf lists the pending jobs of one workflow, in claim order.
func (env *engineEnv) pendingOf(id int64) []int64 {
	var ids []int64
	require.NoError(env.t, env.db.Select(&ids, "SELECT id FROM `"+env.s.Tables()["jobs"]+"` WHERE status = 'pending' AND workflow_id = ? ORDER BY priority DESC, id", id))
	return ids
}

// runOf runs the pending jobs of one workflow until it has none.
func (env *engineEnv) runOf(id int64) {
	env.t.Helper()
	for i := 0; i < 50; i++ {
		ids := env.pendingOf(id)
		if len(ids) == 0 {
			return
		}
		_ = env.runJob(ids[0])
	}
	env.t.Fatalf("workflow %d still has pending jobs", id)
}

func (env *engineEnv) deps(waiter int64) []int64 {
	var ids []int64
	require.NoError(env.t, env.db.Select(&ids, "SELECT dependency_workflow_id FROM `"+env.s.Tables()["workflow_dependencies"]+"` WHERE waiting_workflow_id = ? ORDER BY id", waiter))
	return ids
}

func (env *engineEnv) waitJSON(id int64) string {
	v, ok := env.state(id).Get(workflow.KeyWait)
	if !ok {
		return ""
	}
	b, err := phpjson.Encode(v)
	require.NoError(env.t, err)
	return string(b)
}

func (env *engineEnv) field(id int64, key string) string {
	v, ok := env.state(id).Get(key)
	require.True(env.t, ok, "workflow %d has no %s", id, key)
	b, err := phpjson.Encode(v)
	require.NoError(env.t, err)
	return string(b)
}

// research is a one-step dependency: {"summary": "done <label>"}.
func (env *engineEnv) research(label string) int64 {
	return env.dispatch(workflow.New("research").Then("SummaryStep"), obj("label", label))
}

// failing is a one-step dependency that fails for good.
func (env *engineEnv) failing() int64 {
	return env.dispatch(workflow.New("failing").Then("FailingStep"), obj("label", "f"))
}

// encodeObject is json_encode of a PHP array; encodeValue of an event
// column (null stays NULL).
func encodeObject(o *phpjson.Object) ([]byte, error) { return phpjson.Encode(phpjson.ObjectValue(o)) }

func encodeValue(v phpjson.Value) ([]byte, error) {
	if v.IsNull() {
		return nil, nil
	}
	return phpjson.Encode(v)
}

// msgAdvancedBefore is the message of a job its workflow moved past.
const msgAdvancedBefore = "Workflow advanced before job completion."

// missingStepMessage is the error of a workflow advanced to a step its
// definition lacks.
func missingStepMessage(workflowID int64, index, usable, total int) string {
	return fmt.Sprintf("Workflow %d cannot run step %d: its _steps definition has %d usable steps of total_steps %d.",
		workflowID, index, usable, total)
}

// withRunner is env with an engine whose step runner is r.
func (env *engineEnv) withRunner(r workflow.StepRunner) {
	env.e = engine.NewEngine(engine.EngineConfig{Store: env.s, Handlers: env.e.Handlers(), Kinds: steps.All(), Runner: r})
}
