package workflow

import (
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StepJob is one jobs row a step enqueues, as plain data: the caller adds
// workflow_id, status 'pending', attempts 0 and available_at = UTC now +
// DelaySeconds, as Queue::dispatch does.
type StepJob struct {
	Handler string
	// Payload is the exact payload column (PHP json_encode bytes).
	Payload     []byte
	Queue       string
	Priority    Priority
	MaxAttempts int64
	StepIndex   int
	// DelaySeconds is how far available_at lies in the future.
	DelaySeconds int64
	// ConcurrencyGroup and ConcurrencyLimit are both set or both empty
	// ("" and 0 are NULL in the row).
	ConcurrencyGroup string
	ConcurrencyLimit int64
	CostUnits        int64
	// SessionID and WorkerSession are the jobs.session_id and
	// jobs.worker_session columns of a session-bound job ("" and nil:
	// NULL); WorkerSession is the normalized snapshot, PHP-encoded.
	SessionID     string
	WorkerSession []byte
}

// StepJobs returns the job rows enqueuing step index of a workflow writes
// (Queuety's enqueue_step_def): one handler job for a single step, one per
// branch for a parallel step, and one placeholder job (payload
// {"step_index": i}, cost 0) for every orchestration step. A delay step's
// placeholder becomes available after its delay_seconds.
//
// A for_each step's branch jobs are not here: its placeholder expands them
// at run time.
func StepJobs(step Step, index int, defaults DispatchDefaults, meta HandlerMetadataSource) ([]StepJob, error) {
	def := step.Object()
	if step.Type() == StepParallel {
		var jobs []StepJob
		for _, branch := range ParallelBranches(def) {
			merged := mergeParallelBranch(def, branch)
			handler := branchHandler(merged)
			md, err := metadataErr(meta, handler)
			if err != nil {
				return nil, err
			}
			opts := ResolveStepDispatchOptions(merged, handler, defaults, stepPayload(merged), 1, md)
			job, err := newStepJob(handler, index, opts, nil)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, job)
		}
		return jobs, nil
	}

	if step.Type() == StepLocalActivity {
		return localStepJobs(step, index, defaults)
	}

	if placeholder, ok := placeholderHandlers[step.Type()]; ok {
		payload := phpjson.NewObject().Set("step_index", phpjson.Int(int64(index)))
		opts := ResolveStepDispatchOptions(def, placeholder, defaults, payload, 0, HandlerMetadata{})
		var delay *int64
		if step.Type() == StepDelay {
			// The step's own delay wins over any job_delay option.
			d := phpjson.ToInt(step.field("delay_seconds"))
			delay = &d
		}
		job, err := newStepJob(placeholder, index, opts, delay)
		if err != nil {
			return nil, err
		}
		return []StepJob{job}, nil
	}

	handler := step.Class()
	md, err := metadataErr(meta, handler)
	if err != nil {
		return nil, err
	}
	opts := ResolveStepDispatchOptions(def, handler, defaults, stepPayload(def), 1, md)
	job, err := newStepJob(handler, index, opts, nil)
	if err != nil {
		return nil, err
	}
	return []StepJob{job}, nil
}

// newStepJob encodes the payload and applies Queue::dispatch's column
// rules: a concurrency group needs a limit of at least 1, or neither is
// stored.
func newStepJob(handler string, index int, opts StepDispatchOptions, delay *int64) (StepJob, error) {
	payload, err := phpjson.Encode(phpjson.ObjectValue(opts.Payload))
	if err != nil {
		return StepJob{}, fmt.Errorf("workflow: encoding the payload of step %d (%s): %w", index, handler, err)
	}
	job := StepJob{
		Handler:          handler,
		Payload:          payload,
		Queue:            opts.Queue,
		Priority:         opts.Priority,
		MaxAttempts:      opts.MaxAttempts,
		StepIndex:        index,
		DelaySeconds:     opts.DelaySeconds,
		ConcurrencyGroup: opts.ConcurrencyGroup,
		ConcurrencyLimit: opts.ConcurrencyLimit,
		CostUnits:        opts.CostUnits,
	}
	if delay != nil {
		job.DelaySeconds = *delay
	}
	if err := bindWorkerSession(&job, opts.WorkerSession); err != nil {
		return StepJob{}, fmt.Errorf("workflow: step %d (%s): %w", index, handler, err)
	}
	job.ConcurrencyGroup, job.ConcurrencyLimit = phpjson.ConcurrencyGroup(job.ConcurrencyGroup, job.ConcurrencyLimit)
	return job, nil
}

// StepClasses lists the handler classes the jobs StepJobs writes for step
// name: each branch's of a parallel step, else the step's class.
func StepClasses(step Step) []string {
	var classes []string
	if step.Type() == StepParallel {
		for _, branch := range ParallelBranches(step.Object()) {
			classes = append(classes, branchHandler(mergeParallelBranch(step.Object(), branch)))
		}
	} else {
		classes = append(classes, step.Class())
	}
	return classes
}

// NewStepJob is the jobs row of handler at step index with opts
// (Queue::dispatch's column rules).
func NewStepJob(handler string, index int, opts StepDispatchOptions) (StepJob, error) {
	return newStepJob(handler, index, opts, nil)
}
