package workflow

import (
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// sessionQueue is the queue a step's worker_session routes to, if it names
// one. Only a valid object counts; bindWorkerSession reports the rest.
func sessionQueue(ws phpjson.Value) (string, bool) {
	o, ok := ws.AsObject()
	if !ok {
		return "", false
	}
	return phpjson.StringValue(phpjson.Get(o, "queue"))
}

// bindWorkerSession fills the session columns of a step job from its
// definition's worker_session (null: not bound). A malformed object fails
// the enqueue with the WorkflowCommandNormalizer's messages, so bad input
// from a serialized definition never reaches the jobs table. Without a
// session queue the job's own queue is recorded, as the server defaults a
// session's queue to its activity's.
func bindWorkerSession(job *StepJob, ws phpjson.Value) error {
	if ws.IsNull() {
		return nil
	}
	o, err := sessions.ParseOptions(ws)
	if err != nil {
		return fmt.Errorf("invalid worker_session: %w", err)
	}
	n := o.Normalize()
	if n.Queue == nil {
		q := job.Queue
		n.Queue = &q
	}
	b, err := phpjson.Encode(n.Snapshot())
	if err != nil {
		return fmt.Errorf("encoding worker_session: %w", err)
	}
	job.SessionID, job.WorkerSession = n.SessionID, b
	return nil
}

// sessionStepTypes are the step types whose handler jobs a worker_session
// may bind: durable-workflow accepts worker_session only on
// schedule_activity, and these are Queuety's activity-running steps.
var sessionStepTypes = map[StepType]bool{StepSingle: true, StepParallel: true, StepForEach: true}

// validateWorkerSessions checks every worker_session of a step list (each
// step's and each parallel branch's) before anything is written, with the
// WorkflowCommandNormalizer's messages, and rejects one on a step type
// that runs no handler job of its own.
func validateWorkerSessions(steps []Step) error {
	for i, step := range steps {
		def := step.Object()
		ws := phpjson.Get(def, KeyWorkerSession)
		if !ws.IsNull() && !sessionStepTypes[step.Type()] {
			return &BuildError{Method: "dispatch", Class: InvalidArgumentException, Message: fmt.Sprintf(
				"Workflow step field [worker_session] is not valid on a %s step (step %d). worker_session pins a sequence of handler jobs to one worker and only applies to single, parallel and for_each steps.",
				step.Type(), i)}
		}
		checks := []phpjson.Value{ws}
		if step.Type() == StepParallel {
			checks = checks[:0]
			for _, branch := range ParallelBranches(def) {
				checks = append(checks, phpjson.Get(mergeParallelBranch(def, branch), KeyWorkerSession))
			}
		}
		for _, v := range checks {
			if v.IsNull() {
				continue
			}
			if _, err := sessions.ParseOptions(v); err != nil {
				return &BuildError{Method: "dispatch", Class: InvalidArgumentException, Message: fmt.Sprintf("step %d: %v", i, err)}
			}
		}
	}
	return nil
}
