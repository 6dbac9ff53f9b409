package enginetest

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/storetest"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Env is one test's database with the schema, a store and an engine
// running the fixtures' step classes. A test that builds its own store or
// engine (counted connections, another runner) fills the fields itself.
type Env struct {
	T      *testing.T
	DB     *sqlx.DB
	Store  *store.Store
	Engine *engine.Engine
}

// New returns an Env on a fresh database whose engine runs kinds (the
// caller's steps.All()) and FixtureHandlers.
func New(t *testing.T, kinds []engine.Kind) *Env {
	t.Helper()
	s, db := storetest.New(t, nil, 8)
	return &Env{T: t, DB: db, Store: s, Engine: engine.NewEngine(engine.EngineConfig{Store: s, Handlers: FixtureHandlers(t), Kinds: kinds})}
}

// Ctx is the context the helpers and the tests run on: the background
// one, which no test cancels.
func (env *Env) Ctx() context.Context { return context.Background() }

// Decide retries until the job's max attempts (from the payload's
// __queuety_runtime, as the worker reads it), with no backoff.
func Decide(job *store.JobRow, err error) engine.Failure {
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

// RunJob claims job id as a worker would and runs it through the engine,
// returning the step's error.
func (env *Env) RunJob(id int64) error {
	env.T.Helper()
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), id, "test-worker")
	require.NoError(env.T, err)
	require.True(env.T, ok, "job %d is not pending", id)
	stepErr, err := env.Engine.Run(env.Ctx(), job, Decide)
	require.NoError(env.T, err)
	return stepErr
}

// allRows is the page size of the store's job list that reads every row.
const allRows = math.MaxInt32

// pending lists the pending jobs in claim order: priority first, then id,
// whether or not they are available yet.
func (env *Env) pending() []store.JobRow {
	env.T.Helper()
	rows, err := env.Store.QueryJobs(env.Ctx(), store.JobQuery{Status: "pending"}, allRows, 0)
	require.NoError(env.T, err)
	slices.SortFunc(rows, func(a, b store.JobRow) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
	})
	return rows
}

// PendingJobs lists the ids of pending jobs in claim order.
func (env *Env) PendingJobs() []int64 {
	env.T.Helper()
	var ids []int64
	for _, j := range env.pending() {
		ids = append(ids, j.ID)
	}
	return ids
}

// PendingOf lists the pending jobs of one workflow, in claim order.
func (env *Env) PendingOf(workflowID int64) []int64 {
	env.T.Helper()
	var ids []int64
	for _, j := range env.pending() {
		if j.WorkflowID.Valid && j.WorkflowID.Int64 == workflowID {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// Drain runs pending jobs until none is left (at most limit).
func (env *Env) Drain(limit int) {
	env.T.Helper()
	for i := 0; i < limit; i++ {
		ids := env.PendingJobs()
		if len(ids) == 0 {
			return
		}
		_ = env.RunJob(ids[0])
	}
	env.T.Fatalf("still jobs pending after %d runs", limit)
}

// RunNext runs the next n pending jobs.
func (env *Env) RunNext(n int) {
	env.T.Helper()
	for i := 0; i < n; i++ {
		ids := env.PendingJobs()
		require.NotEmpty(env.T, ids, "no pending job to run")
		_ = env.RunJob(ids[0])
	}
}

// RunOf runs the pending jobs of one workflow until it has none.
func (env *Env) RunOf(workflowID int64) {
	env.T.Helper()
	for i := 0; i < 50; i++ {
		ids := env.PendingOf(workflowID)
		if len(ids) == 0 {
			return
		}
		_ = env.RunJob(ids[0])
	}
	env.T.Fatalf("workflow %d still has pending jobs", workflowID)
}

// Dispatch builds b with initial and dispatches it, returning its id.
func (env *Env) Dispatch(b *workflow.Builder, initial *phpjson.Object) int64 {
	env.T.Helper()
	d, err := b.Build(initial)
	require.NoError(env.T, err)
	id, _, err := env.Engine.Dispatch(env.Ctx(), d)
	require.NoError(env.T, err)
	return id
}

// Research is a one-step dependency: {"summary": "done <label>"}.
func (env *Env) Research(label string) int64 {
	return env.Dispatch(workflow.New("research").Then("SummaryStep"), Obj("label", label))
}

// Failing is a one-step dependency that fails for good.
func (env *Env) Failing() int64 {
	return env.Dispatch(workflow.New("failing").Then("FailingStep"), Obj("label", "f"))
}

// Workflow reads workflow id's row.
func (env *Env) Workflow(id int64) *store.WorkflowRow {
	env.T.Helper()
	wf, err := env.Store.GetWorkflow(env.Ctx(), id)
	require.NoError(env.T, err)
	return wf
}

// State parses workflow id's state column.
func (env *Env) State(id int64) *workflow.State {
	env.T.Helper()
	s, err := workflow.ParseState([]byte(env.Workflow(id).State))
	require.NoError(env.T, err)
	return s
}

// SetState overwrites a workflow's state column with raw bytes.
func (env *Env) SetState(id int64, state string) {
	env.T.Helper()
	require.NoError(env.T, env.Store.WorkflowTx(env.Ctx(), func(w *store.WorkflowTx) error {
		return w.SetState(id, []byte(state))
	}))
}

// PublicJSON is workflow id's state without its reserved keys, encoded.
func (env *Env) PublicJSON(id int64) string {
	b, err := phpjson.Encode(phpjson.ObjectValue(env.State(id).Public()))
	require.NoError(env.T, err)
	return string(b)
}

// WaitJSON is the encoded wait record of workflow id ("" without one).
func (env *Env) WaitJSON(id int64) string {
	v, ok := env.State(id).Get(workflow.KeyWait)
	if !ok {
		return ""
	}
	b, err := phpjson.Encode(v)
	require.NoError(env.T, err)
	return string(b)
}

// Field is the encoded value of key in workflow id's state, which must
// have it.
func (env *Env) Field(id int64, key string) string {
	v, ok := env.State(id).Get(key)
	require.True(env.T, ok, "workflow %d has no %s", id, key)
	b, err := phpjson.Encode(v)
	require.NoError(env.T, err)
	return string(b)
}

// Jobs lists the jobs of a workflow, oldest first.
func (env *Env) Jobs(workflowID int64) []store.JobRow {
	rows, err := env.Store.QueryJobs(env.Ctx(), store.JobQuery{}, allRows, 0)
	require.NoError(env.T, err)
	var out []store.JobRow
	// The store lists newest first.
	for _, j := range slices.Backward(rows) {
		if j.WorkflowID.Valid && j.WorkflowID.Int64 == workflowID {
			out = append(out, j)
		}
	}
	return out
}

// LogEvents lists the events of a workflow's log rows, oldest first.
func (env *Env) LogEvents(workflowID int64) []string {
	rows, err := env.Store.QueryLogs(env.Ctx(), store.LogFilter{WorkflowID: sql.NullInt64{Int64: workflowID, Valid: true}})
	require.NoError(env.T, err)
	var ev []string
	for _, r := range rows {
		ev = append(ev, r.Event)
	}
	return ev
}

// WorkflowEvents lists the events of a workflow's timeline, oldest first.
func (env *Env) WorkflowEvents(workflowID int64) []string {
	rows, err := env.Store.WorkflowTimeline(env.Ctx(), workflowID, 0, allRows)
	require.NoError(env.T, err)
	var ev []string
	for _, r := range rows {
		ev = append(ev, r.Event)
	}
	return ev
}

// Deps lists the workflows waiter waits (or waited) for, in the order its
// dependency rows were written.
func (env *Env) Deps(waiter int64) []int64 {
	rows, err := env.Store.ExportWorkflowRows(env.Ctx(), waiter)
	require.NoError(env.T, err)
	var ids []int64
	for _, r := range rows.Dependencies {
		v := r.Get("dependency_workflow_id")
		require.NotNil(env.T, v)
		id, err := strconv.ParseInt(*v, 10, 64)
		require.NoError(env.T, err)
		ids = append(ids, id)
	}
	return ids
}

// NormalizeWorkflowIDs reads a list of workflow ids as the engine stores
// them (an int or a list of ints > 0, duplicates dropped).
func NormalizeWorkflowIDs(v phpjson.Value) []int64 {
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
