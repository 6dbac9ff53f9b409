package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/internal/storetest"
	store "github.com/queuety-go/queuety/sql"
)

const (
	workerToken   = "worker-secret-0123456789"
	operatorToken = "operator-secret-0123456789"
)

// t0 is the fake clock's start, a whole second so stored times compare.
var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	ctx   context.Context
	db    *sqlx.DB
	st    *store.Store
	clk   *clock.Fake
	reg   *sessions.Registry
	tasks *fakeTasks
	srv   *Server
}

// newEnv migrates a fresh database and builds a Server with both tokens,
// a fake task source and a fake clock. edit may change the Config.
func newEnv(t *testing.T, edit ...func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st, db := storetest.New(t, clk, 8)
	reg := sessions.New(st, sessions.Config{Clock: clk, StaleAfter: 60 * time.Second})
	tasks := &fakeTasks{}
	cfg := Config{
		WorkerToken: workerToken, OperatorToken: operatorToken,
		Registry: reg, Tasks: tasks, ServerID: "test", Version: "test",
		PollInterval: time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	return &env{t: t, ctx: ctx, db: db, st: st, clk: clk, reg: reg, tasks: tasks, srv: srv}
}

// resp is a recorded response.
type resp struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r resp) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

func (r resp) reason() any { return r.body["reason"] }

// obj returns the nested object at a dotted path ("session.holder").
func (r resp) obj(path string) map[string]any {
	m := r.body
	for _, k := range strings.Split(path, ".") {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

// req describes a request; the zero value is a worker-plane POST with the
// worker token and protocol 1.13.
type req struct {
	method, path string
	body         any // string (sent as is), []byte, or marshaled
	token        string
	auth         string // the whole Authorization header, instead of "Bearer " + token
	noToken      bool
	version      string // worker protocol header; "-" omits it
	controlPlane string // "-" omits it
	namespace    string
	host         string // the Host header ("" = example.com, httptest's)
	ctx          context.Context
}

func (e *env) do(q req) resp {
	e.t.Helper()
	out, err := e.send(q)
	require.NoError(e.t, err)
	return out
}

// doAsync is do for other goroutines: failures come back as a status 0
// answer holding the error, for the test goroutine to report.
func (e *env) doAsync(q req) resp {
	out, err := e.send(q)
	if err != nil {
		return resp{raw: []byte(err.Error())}
	}
	return out
}

func (e *env) send(q req) (resp, error) {
	if q.method == "" {
		q.method = http.MethodPost
	}
	var rd *bytes.Reader
	switch b := q.body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(raw)
	}
	ctx := q.ctx
	if ctx == nil {
		ctx = e.ctx
	}
	r := httptest.NewRequestWithContext(ctx, q.method, q.path, rd)
	if q.host != "" {
		r.Host = q.host
	}
	if !q.noToken {
		tok := q.token
		if tok == "" {
			tok = workerToken
			if !strings.HasPrefix(q.path, "/api/worker/") {
				tok = operatorToken
			}
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		if q.auth != "" {
			r.Header.Set("Authorization", q.auth)
		}
	}
	switch q.version {
	case "":
		r.Header.Set(HeaderWorkerProtocol, "1.13")
	case "-":
	default:
		r.Header.Set(HeaderWorkerProtocol, q.version)
	}
	switch q.controlPlane {
	case "":
		r.Header.Set(HeaderControlPlane, "2")
	case "-":
	default:
		r.Header.Set(HeaderControlPlane, q.controlPlane)
	}
	if q.namespace != "" {
		r.Header.Set(HeaderNamespace, q.namespace)
	}
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	out := resp{status: w.Code, header: w.Header(), raw: w.Body.Bytes()}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		return out, fmt.Errorf("content type %q, body: %s", ct, out.raw)
	}
	if err := json.Unmarshal(out.raw, &out.body); err != nil {
		return out, fmt.Errorf("%w; body: %s", err, out.raw)
	}
	return out, nil
}

// worker registers a worker through the API.
func (e *env) register(id string, queue string, caps ...string) resp {
	e.t.Helper()
	body := map[string]any{"worker_id": id, "task_queue": queue, "runtime": "python", "capabilities": caps}
	r := e.do(req{path: "/api/worker/register", body: body})
	require.Equal(e.t, http.StatusCreated, r.status, "%s", r.raw)
	return r
}

// dump is every row of our tables and the jobs table, to prove a refused
// request changed nothing.
func (e *env) dump() string {
	e.t.Helper()
	var b strings.Builder
	tables := e.st.Tables()
	for _, name := range []string{tables["workers"], tables["worker_sessions"], tables["jobs"]} {
		rows, err := e.db.Queryx("SELECT * FROM `" + name + "` ORDER BY 1, 2")
		require.NoError(e.t, err)
		for rows.Next() {
			vals, err := rows.SliceScan()
			require.NoError(e.t, err)
			fmt.Fprintf(&b, "%s %q\n", name, vals)
		}
		require.NoError(e.t, rows.Err())
		_ = rows.Close()
	}
	return b.String()
}

// ---- the contract files, compiled once ----

const specBase = "https://queuety.test/spec/"

var (
	specOnce     sync.Once
	specCompiler *jsonschema.Compiler
	specErr      error
	specMu       sync.Mutex
	specSchemas  = map[string]*jsonschema.Schema{}
)

func loadSpec() {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, name := range []string{"worker-sessions-runtime.schema.json", "local-activity-runtime.schema.json"} {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			specErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		_ = f.Close()
		if err != nil {
			specErr = err
			return
		}
		if specErr = c.AddResource(specBase+name, doc); specErr != nil {
			return
		}
	}
	// The OpenAPI is YAML; its components are JSON Schema 2020-12 and its
	// refs point at the two schema files beside it.
	raw, err := os.ReadFile("testdata/worker-protocol-api.openapi.yaml")
	if err != nil {
		specErr = err
		return
	}
	var y any
	if specErr = yaml.Unmarshal(raw, &y); specErr != nil {
		return
	}
	j, err := json.Marshal(y)
	if err != nil {
		specErr = err
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		specErr = err
		return
	}
	specErr = c.AddResource(specBase+"worker-protocol-api.openapi.json", doc)
	specCompiler = c
}

// Schema locations.
const (
	sessionsSchema = "worker-sessions-runtime.schema.json"
	localSchema    = "local-activity-runtime.schema.json"
	openapi        = "worker-protocol-api.openapi.json"
)

// component is the OpenAPI schema of a named component.
func component(name string) string {
	return openapi + "#/components/schemas/" + name
}

// response is the body schema of an OpenAPI response component.
func response(name string) string {
	return openapi + "#/components/responses/" + name + "/content/application~1json/schema"
}

// def is a $defs entry of a runtime schema.
func def(file, name string) string { return file + "#/$defs/" + name }

// validate checks a JSON document (bytes or a Go value) against a schema
// location: a file name and a JSON pointer fragment ("file#/ptr"; the bare
// file name is its root).
func validate(t *testing.T, where string, doc any) {
	t.Helper()
	specOnce.Do(loadSpec)
	require.NoError(t, specErr)
	loc := specBase + where
	specMu.Lock()
	sch, ok := specSchemas[loc]
	if !ok {
		var err error
		sch, err = specCompiler.Compile(loc)
		if err != nil {
			specMu.Unlock()
			require.NoError(t, err, loc)
		}
		specSchemas[loc] = sch
	}
	specMu.Unlock()
	var raw []byte
	switch d := doc.(type) {
	case []byte:
		raw = d
	default:
		var err error
		raw, err = json.Marshal(d)
		require.NoError(t, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(inst), "%s\n%s", loc, raw)
}

// invalid asserts a document does NOT validate, to show a check can fail.
func invalid(t *testing.T, where string, doc any) {
	t.Helper()
	specOnce.Do(loadSpec)
	require.NoError(t, specErr)
	specMu.Lock()
	sch, err := specCompiler.Compile(specBase + where)
	specMu.Unlock()
	require.NoError(t, err)
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Error(t, sch.Validate(inst))
}

// ---- a fake task source ----

type fakeTasks struct {
	mu         sync.Mutex
	polls      []TaskPoll
	queue      []*Task // handed out one per poll, after emptyPolls nil answers
	emptyPolls int
	pollErr    error
	// pollCalled is signalled on every Poll, when set.
	pollCalled chan struct{}

	heartbeats  []TaskHeartbeat
	hbResult    TaskHeartbeatResult
	completions []TaskCompletion
	failures    []TaskFailure
	outcome     TaskOutcome
}

func (f *fakeTasks) Poll(ctx context.Context, p TaskPoll) (*Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls = append(f.polls, p)
	if f.pollCalled != nil {
		select {
		case f.pollCalled <- struct{}{}:
		default:
		}
	}
	if f.pollErr != nil {
		return nil, f.pollErr
	}
	if f.emptyPolls > 0 {
		f.emptyPolls--
		return nil, nil
	}
	if len(f.queue) == 0 {
		return nil, nil
	}
	t := f.queue[0]
	f.queue = f.queue[1:]
	return t, nil
}

func (f *fakeTasks) Heartbeat(ctx context.Context, h TaskHeartbeat) (TaskHeartbeatResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeats = append(f.heartbeats, h)
	return f.hbResult, nil
}

func (f *fakeTasks) Complete(ctx context.Context, c TaskCompletion) (TaskOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completions = append(f.completions, c)
	return f.outcome, nil
}

func (f *fakeTasks) Fail(ctx context.Context, x TaskFailure) (TaskOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, x)
	return f.outcome, nil
}

func (f *fakeTasks) set(fn func(f *fakeTasks)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeTasks) snapshot() fakeTasks {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeTasks{
		polls: append([]TaskPoll(nil), f.polls...), heartbeats: append([]TaskHeartbeat(nil), f.heartbeats...),
		completions: append([]TaskCompletion(nil), f.completions...), failures: append([]TaskFailure(nil), f.failures...),
	}
}

type fakeMetrics map[string]any

func (m fakeMetrics) OperatorMetrics(ctx context.Context, ns string) (map[string]any, error) {
	out := map[string]any{"namespace_seen": ns}
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}
