package workflow

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// sessionWorkflow is the seed-000 shape: plan, two GPU steps in one
// session, a session-bound fan-out and parallel, then an unbound step.
// The PHP twin is testdata/session_steps.php.
func sessionWorkflow() *Builder {
	b := New("render").OnQueue("default").Then("PlanFrames")
	gpu := b.WorkerSession("gpu-render", WorkerSessionOptions{
		Queue:                   "gpu-activities",
		Requirements:            []string{"gpu:nvidia-l4", " gpu:nvidia-l4 ", "fs:/mnt/models"},
		LeaseSeconds:            120,
		TTLSeconds:              1800,
		MaxConcurrentActivities: 1,
	})
	gpu.Then("RenderFramesActivity", Named("render")).
		Then("AssembleManifestActivity").CompensateWith("DropManifest").
		ForEach("frames", "EncodeFrame", ResultKey("encoded"), ForEachQuorum, Quorum(2)).
		Parallel("UploadA", "UploadB")
	b.WorkerSession(" cpu ", WorkerSessionOptions{Connection: "redis", CreateIfMissing: new(false), AllowReacquireAfterFailure: new(false)}).
		Then("Thumbnail")
	return b.Then("Publish")
}

const sessionWorkflowSteps = `[` +
	`{"type":"single","name":"0","class":"PlanFrames"},` +
	`{"type":"single","name":"render","class":"RenderFramesActivity","worker_session":{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt\/models"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}},` +
	`{"type":"single","name":"2","class":"AssembleManifestActivity","worker_session":{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt\/models"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true},"compensation":"DropManifest"},` +
	`{"type":"for_each","name":"3","items_key":"frames","class":"EncodeFrame","result_key":"encoded","mode":"quorum","quorum":2,"reducer_class":null,"worker_session":{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt\/models"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true},"compensation":null},` +
	`{"type":"parallel","name":"4","handlers":["UploadA","UploadB"],"worker_session":{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt\/models"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}},` +
	`{"type":"single","name":"5","class":"Thumbnail","worker_session":{"session_id":"cpu","connection":"redis","queue":null,"requirements":[],"lease_seconds":null,"ttl_seconds":null,"max_concurrent_activities":null,"create_if_missing":false,"allow_reacquire_after_failure":false}},` +
	`{"type":"single","name":"6","class":"Publish"}]`

func encodedSteps(t *testing.T, b *Builder) string {
	t.Helper()
	steps, err := b.buildSteps()
	require.NoError(t, err)
	out, err := phpjson.Encode(phpjson.List(steps...))
	require.NoError(t, err)
	return string(out)
}

func TestWorkerSessionStepsSerialize(t *testing.T) {
	t.Parallel()
	require.Equal(t, sessionWorkflowSteps, encodedSteps(t, sessionWorkflow()))

	// The session is part of the definition hash: binding a step changes it.
	plain, err := New("w").Then("A").DefinitionHash()
	require.NoError(t, err)
	bound := New("w")
	bound.WorkerSession("s", WorkerSessionOptions{}).Then("A")
	boundHash, err := bound.DefinitionHash()
	require.NoError(t, err)
	require.NotEqual(t, plain, boundHash)

	// The snapshot in the step parses back with the normalizer's rules.
	steps, err := sessionWorkflow().Steps()
	require.NoError(t, err)
	ws, ok := steps[1].Get(KeyWorkerSession)
	require.True(t, ok)
	o, err := sessions.ParseOptions(ws)
	require.NoError(t, err)
	require.Equal(t, "gpu-render", o.SessionID)
	require.Equal(t, []string{"gpu:nvidia-l4", "fs:/mnt/models"}, o.Requirements)
}

func TestWorkerSessionBuildErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		id   string
		opts WorkerSessionOptions
		msg  string
	}{
		"blank id":          {" ", WorkerSessionOptions{}, "Worker session session id must be a non-empty string."},
		"blank queue":       {"s", WorkerSessionOptions{Queue: "  "}, "Worker session queue must be a non-empty string."},
		"blank connection":  {"s", WorkerSessionOptions{Connection: "\t"}, "Worker session connection must be a non-empty string."},
		"blank requirement": {"s", WorkerSessionOptions{Requirements: []string{"a", ""}}, "Worker session requirement at index 1 must be a non-empty string."},
		"negative lease":    {"s", WorkerSessionOptions{LeaseSeconds: -1}, "Worker session leaseSeconds must be a positive integer."},
		"negative ttl":      {"s", WorkerSessionOptions{TTLSeconds: -1}, "Worker session ttlSeconds must be a positive integer."},
		"negative max":      {"s", WorkerSessionOptions{MaxConcurrentActivities: -3}, "Worker session maxConcurrentActivities must be a positive integer."},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New("w").Then("A")
			b.WorkerSession(c.id, c.opts).Then("B").Parallel("C")
			_, err := b.Build(nil)
			var be *BuildError
			require.True(t, errors.As(err, &be), "%v", err)
			require.Equal(t, BuildError{Method: "worker_session", Class: InvalidArgumentException, Message: c.msg}, *be)
		})
	}
}

func TestWorkerSessionStepJobsRouting(t *testing.T) {
	t.Parallel()
	defaults := DispatchDefaults{Queue: "wf-q", Priority: PriorityLow, MaxAttempts: 3}
	step := func(js string) Step {
		v, err := phpjson.DecodeString(js)
		require.NoError(t, err)
		s, err := ParseStep(v)
		require.NoError(t, err)
		return s
	}
	meta := HandlerMetadataMap{"MetaQ": {Queue: "meta-q"}}
	cases := []struct {
		name, def, queue, sessionQueue string
	}{
		{"session queue beats workflow queue", `{"type":"single","class":"A","worker_session":{"session_id":"s","queue":"gpu"}}`, "gpu", "gpu"},
		{"step queue beats session queue", `{"type":"single","class":"A","queue":"own","worker_session":{"session_id":"s","queue":"gpu"}}`, "own", "gpu"},
		{"config queue beats session queue", `{"type":"single","class":"A","config":{"queue":"cfg"},"worker_session":{"session_id":"s","queue":"gpu"}}`, "cfg", "gpu"},
		{"session queue beats handler metadata", `{"type":"single","class":"MetaQ","worker_session":{"session_id":"s","queue":"gpu"}}`, "gpu", "gpu"},
		{"no session queue: handler metadata, recorded as the session queue", `{"type":"single","class":"MetaQ","worker_session":{"session_id":"s"}}`, "meta-q", "meta-q"},
		{"no session queue: workflow queue", `{"type":"single","class":"A","worker_session":{"session_id":"s","queue":null}}`, "wf-q", "wf-q"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			jobs, err := StepJobs(step(c.def), 0, defaults, meta)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			require.Equal(t, c.queue, jobs[0].Queue)
			require.Equal(t, "s", jobs[0].SessionID)
			require.Equal(t, `{"session_id":"s","connection":null,"queue":"`+c.sessionQueue+`","requirements":[],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`,
				string(jobs[0].WorkerSession))
		})
	}

	// Parallel: every branch is bound; a serialized branch may bring its own session.
	jobs, err := StepJobs(step(`{"type":"parallel","branches":["A",{"class":"B","worker_session":{"session_id":"other","lease_seconds":5}}],
		"worker_session":{"session_id":"s","queue":"gpu","requirements":["x"]}}`), 2, defaults, nil)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Equal(t, [2]string{"s", "other"}, [2]string{jobs[0].SessionID, jobs[1].SessionID})
	require.Equal(t, "gpu", jobs[0].Queue)
	require.Equal(t, "wf-q", jobs[1].Queue, "the branch's own session has no queue")
	require.Equal(t, `{"session_id":"other","connection":null,"queue":"wf-q","requirements":[],"lease_seconds":5,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`,
		string(jobs[1].WorkerSession))

	// A for_each placeholder only plans the items: it is not bound and
	// stays on the workflow queue.
	jobs, err = StepJobs(step(`{"type":"for_each","items_key":"i","class":"A","worker_session":{"session_id":"s","queue":"gpu"}}`), 0, defaults, nil)
	require.NoError(t, err)
	require.Equal(t, "", jobs[0].SessionID)
	require.Nil(t, jobs[0].WorkerSession)
	require.Equal(t, "wf-q", jobs[0].Queue)

	// Unbound steps write NULL columns.
	jobs, err = StepJobs(step(`{"type":"single","class":"A"}`), 0, defaults, nil)
	require.NoError(t, err)
	require.Equal(t, "", jobs[0].SessionID)
	require.Nil(t, jobs[0].WorkerSession)

	// A malformed session never becomes a job.
	_, err = StepJobs(step(`{"type":"single","class":"A","worker_session":{"session_id":"s","lease_seconds":"5"}}`), 0, defaults, nil)
	require.ErrorContains(t, err, "worker_session.lease_seconds: Worker session field [lease_seconds] must be a positive integer when provided.")
}

func TestDispatchDefinitionValidatesWorkerSessions(t *testing.T) {
	t.Parallel()
	dispatch := func(steps string) error {
		v, err := phpjson.DecodeString(`{"name":"d","steps":` + steps + `}`)
		require.NoError(t, err)
		o, _ := v.AsObject()
		def, err := ParseRuntimeDefinition(phpjson.ObjectValue(o))
		require.NoError(t, err)
		_, err = def.Dispatch(nil, DefinitionDispatchOptions{})
		return err
	}
	require.NoError(t, dispatch(`[{"type":"single","class":"A","worker_session":{"session_id":"s"}}]`))
	// Only the first step's jobs are written at dispatch; a later step's
	// bad session is still refused before anything is written.
	err := dispatch(`[{"type":"single","class":"A"},{"type":"single","class":"B","worker_session":{"queue":"q"}}]`)
	require.ErrorContains(t, err, "step 1: worker_session.session_id: Worker session commands require a non-empty session_id.")
	err = dispatch(`[{"type":"parallel","branches":["A",{"class":"B","worker_session":"gpu"}]}]`)
	require.ErrorContains(t, err, "step 0: Workflow task command field [worker_session] must be an object when provided.")
	err = dispatch(`[{"type":"single","class":"A"},{"type":"delay","delay_seconds":5,"worker_session":{"session_id":"s"}}]`)
	require.ErrorContains(t, err, "Workflow step field [worker_session] is not valid on a delay step (step 1).")
	// Explicit null is "not provided".
	require.NoError(t, dispatch(`[{"type":"delay","delay_seconds":5,"worker_session":null}]`))
}

// TestWorkerSessionStepsMatchPHP builds the same session workflow with the
// PHP bridge (testdata/session_steps.php) and requires the same `_steps`
// bytes, and the same queue and jobs.worker_session bytes for the first
// job of every bound step (a for_each's item jobs).
func TestWorkerSessionStepsMatchPHP(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("php")
	require.NoError(t, err, "php is required: scripts/ensure-php.sh installs it")
	out, err := exec.Command(bin, "testdata/session_steps.php", "../php-bridge/autoload.php").CombinedOutput()
	require.NoError(t, err, "php: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 6)

	goSteps := encodedSteps(t, sessionWorkflow())
	require.Equal(t, goSteps, lines[0], "PHP and Go _steps bytes")
	require.Equal(t, sessionWorkflowSteps, lines[0])

	steps, err := sessionWorkflow().Steps()
	require.NoError(t, err)
	defaults := DispatchDefaults{Queue: "default", Priority: PriorityLow, MaxAttempts: 3}
	for i := 1; i <= 5; i++ {
		var job StepJob
		if steps[i].Type() == StepForEach {
			// An item job, as the for_each placeholder enqueues it.
			opts := ResolveStepDispatchOptions(steps[i].Object(), steps[i].Class(), defaults, nil, 1, HandlerMetadata{})
			job, err = newStepJob(steps[i].Class(), i, opts, nil)
		} else {
			var jobs []StepJob
			jobs, err = StepJobs(steps[i], i, defaults, nil)
			job = jobs[0]
		}
		require.NoError(t, err)
		ws, err := phpjson.Decode(job.WorkerSession)
		require.NoError(t, err)
		want, err := phpjson.Encode(phpjson.ObjectValue(phpjson.NewObject().
			Set("step", phpjson.Int(int64(i))).
			Set("queue", phpjson.String(job.Queue)).
			Set("session_id", phpjson.String(job.SessionID)).
			Set("worker_session", ws)))
		require.NoError(t, err)
		require.Equal(t, string(want), lines[i], "step %d", i)
	}
}
