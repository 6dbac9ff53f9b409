package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/storetest"
	store "github.com/queuety-go/queuety/sql"
)

// t0 is the fake clock's start, a whole second so stored times compare
// exactly.
var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

type env struct {
	t   *testing.T
	ctx context.Context
	st  *store.Store
	clk *clock.Fake
	reg *Registry
}

// newEnv migrates a fresh database and builds a Registry on a fake clock
// with the server tests' 60 s stale threshold.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st, _ := storetest.New(t, clk, 16)
	return &env{t: t, ctx: ctx, st: st, clk: clk, reg: New(st, Config{Clock: clk, StaleAfter: 60 * time.Second})}
}

func val[T any](v T) *T { return &v }

// register registers a worker on queue gpu-activities (plus extra queues)
// with the given capabilities and the default session limit.
func (e *env) register(id string, caps ...string) Worker {
	e.t.Helper()
	w, err := e.reg.Register(e.ctx, Registration{WorkerID: id, TaskQueue: "gpu-activities", Capabilities: caps})
	require.NoError(e.t, err)
	return w
}

func (e *env) registerWith(reg Registration) Worker {
	e.t.Helper()
	w, err := e.reg.Register(e.ctx, reg)
	require.NoError(e.t, err)
	return w
}

// gpu is the session options of the lifecycle scenarios.
func gpu(id string) Options {
	return Options{
		SessionID: id, Queue: val("gpu-activities"), Requirements: []string{"gpu:nvidia-l4"},
		LeaseSeconds: val(120), TTLSeconds: val(600),
	}
}

func (e *env) create(worker string, o Options) Result {
	e.t.Helper()
	res, err := e.reg.Create(e.ctx, "", worker, o)
	require.NoError(e.t, err)
	e.checkResult(res)
	return res
}

func (e *env) admit(a Admission) Result {
	e.t.Helper()
	var res Result
	err := e.st.SessionTx(e.ctx, func(tx store.Sessions) error {
		var err error
		res, err = e.reg.Admit(e.ctx, tx, a)
		return err
	})
	require.NoError(e.t, err)
	e.checkResult(res)
	return res
}

func (e *env) heartbeat(session, worker string, lease *int) Result {
	e.t.Helper()
	res, err := e.reg.HeartbeatSession(e.ctx, "", session, worker, lease)
	require.NoError(e.t, err)
	e.checkResult(res)
	return res
}

func (e *env) close(session, worker string) Result {
	e.t.Helper()
	res, err := e.reg.Close(e.ctx, "", session, worker)
	require.NoError(e.t, err)
	e.checkResult(res)
	return res
}

func (e *env) get(session string) Snapshot {
	e.t.Helper()
	s, err := e.reg.Get(e.ctx, "", session)
	require.NoError(e.t, err)
	validate(e.t, "workerSessionSnapshot", s)
	return s
}

func (e *env) list() Visibility {
	e.t.Helper()
	v, err := e.reg.List(e.ctx, "")
	require.NoError(e.t, err)
	validate(e.t, "workerSessionVisibility", v)
	return v
}

// checkResult validates every result against the schema and checks the
// HTTP status agrees with the reason.
func (e *env) checkResult(res Result) {
	e.t.Helper()
	validate(e.t, "workerSessionOperationResult", res)
	if res.Admitted {
		require.Empty(e.t, res.Reason)
		require.Contains(e.t, []int{200, 201}, res.Status)
	} else {
		require.Equal(e.t, HTTPStatus(res.Reason), res.Status, res.Error)
		require.NotEmpty(e.t, res.Error)
	}
}

// processing stands in for the claim: it writes a session-bound job as a
// running attempt reserved by worker.
func (e *env) processing(session, worker string) int64 {
	e.t.Helper()
	id, _, err := e.st.InsertJob(e.ctx, store.InsertJob{Queue: "gpu-activities", Handler: "Render", Payload: []byte("[]"), SessionID: session})
	require.NoError(e.t, err)
	_, err = e.st.DB().ExecContext(e.ctx, "UPDATE `"+e.st.Tables()["jobs"]+"` SET status = 'processing', reserved_by = ?, attempts = 1 WHERE id = ?", worker, id)
	require.NoError(e.t, err)
	return id
}

func requireRefused(t *testing.T, res Result, reason string) {
	t.Helper()
	require.False(t, res.Admitted, "%+v", res)
	require.Equal(t, reason, res.Reason, res.Error)
	require.Equal(t, HTTPStatus(reason), res.Status)
	require.Empty(t, res.Outcome)
}

func requireAdmitted(t *testing.T, res Result, outcome string, status int) {
	t.Helper()
	require.True(t, res.Admitted, "%s: %s", res.Reason, res.Error)
	require.Equal(t, outcome, res.Outcome)
	require.Equal(t, status, res.Status)
	require.NotNil(t, res.Session)
}

var (
	schemaOnce sync.Once
	schemaDoc  any
	schemaErr  error
	schemaMu   sync.Mutex
	schemas    = map[string]*jsonschema.Schema{}
)

// validate marshals v and validates it against a $defs entry of
// worker-sessions-runtime.schema.json (a copy of the contract file), with
// formats (date-time) asserted.
func validate(t *testing.T, def string, v any) {
	t.Helper()
	schemaOnce.Do(func() {
		f, err := os.Open("testdata/worker-sessions-runtime.schema.json")
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		schemaDoc, schemaErr = jsonschema.UnmarshalJSON(f)
	})
	require.NoError(t, schemaErr)
	schemaMu.Lock()
	sch, ok := schemas[def]
	if !ok {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		require.NoError(t, c.AddResource("https://queuety.test/worker-sessions-runtime.schema.json", schemaDoc))
		var err error
		sch, err = c.Compile("https://queuety.test/worker-sessions-runtime.schema.json#/$defs/" + def)
		require.NoError(t, err)
		schemas[def] = sch
	}
	schemaMu.Unlock()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(inst), "%s does not validate:\n%s", def, b)
}

// field reads one key of v's JSON.
func field(t *testing.T, v any, key string) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m[key]
}
