package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// retryable are the job statuses a dashboard retry acts on: a job that
// ended badly. A completed job is never run again by a retry, and a
// pending or processing one is left to the worker that has it.
var retryable = []string{store.StatusBuried, store.StatusFailed}

// jobRetry is what one retry click did: plain jobs made pending, workflows
// retried from their failed step (a buried step job is retried through its
// workflow, as `queuety workflow retry` does: making the job pending
// would leave it unclaimed for ever, since steps are claimed only for a
// running workflow), and what was left as it was, by reason.
type jobRetry struct {
	jobs      int
	workflows []int64
	left      map[string]int // reason → jobs
}

func (r *jobRetry) leave(reason string) {
	if r.left == nil {
		r.left = map[string]int{}
	}
	r.left[reason]++
}

// retryJobs retries the jobs ids names, each by what it is.
func (s *site) retryJobs(ctx context.Context, ids []int64) (jobRetry, error) {
	var res jobRetry
	c := s.Client
	tried := map[int64]bool{} // workflows already retried (or refused) in this click
	for _, id := range ids {
		j, err := clientstore.Of(c).GetJob(ctx, id)
		switch {
		case errors.Is(err, store.ErrJobNotFound):
			res.leave("no longer existed")
			continue
		case err != nil:
			return res, fmt.Errorf("read job %d: %w", id, err)
		case j.Status != store.StatusBuried && j.Status != store.StatusFailed:
			res.leave(j.Status)
			continue
		}
		if !j.WorkflowID.Valid {
			moved, err := s.retryPlainJob(ctx, j)
			if err != nil {
				return res, fmt.Errorf("retry job %d: %w", id, err)
			}
			if moved {
				res.jobs++
			} else {
				res.leave("changed meanwhile")
			}
			continue
		}
		wf := j.WorkflowID.Int64
		if tried[wf] {
			continue // its workflow's retry covers it
		}
		tried[wf] = true
		err = c.RetryWorkflow(ctx, wf, s.Registry)
		switch {
		case err == nil:
			res.workflows = append(res.workflows, wf)
		case workflow.IsLifecycleError(err) || errors.Is(err, store.ErrWorkflowNotFound):
			res.leave(fmt.Sprintf("step of workflow #%d: %v", wf, err))
		default:
			return res, fmt.Errorf("retry workflow %d of job %d: %w", wf, id, err)
		}
	}
	return res, nil
}

// retryPlainJob makes a buried or failed job pending; a buried one only
// while it is still buried.
func (s *site) retryPlainJob(ctx context.Context, j *store.JobRow) (bool, error) {
	if j.Status == store.StatusBuried {
		n, err := s.Client.RetryBuriedJobs(ctx, []int64{j.ID})
		return n == 1, err
	}
	// A failed row is one a PHP worker left between its failure and its
	// retry or burial (the plugin's Queue::fail): nothing else moves it.
	err := s.Client.RetryJob(ctx, j.ID)
	if errors.Is(err, store.ErrJobNotFound) {
		return false, nil
	}
	return err == nil, err
}

// message is the flash after a retry.
func (r jobRetry) message() string {
	return r.messageAfter(fmt.Sprintf("Retried: %d jobs.", r.jobs))
}

// messageAfter is the flash after a retry, starting with what the plain
// jobs' retry was.
func (r jobRetry) messageAfter(first string) string {
	parts := []string{first}
	if n := len(r.workflows); n > 0 {
		ids := make([]string, n)
		for i, id := range r.workflows {
			ids[i] = fmt.Sprintf("#%d", id)
		}
		parts = append(parts, fmt.Sprintf("%d workflows retried from their failed step (%s).", n, strings.Join(ids, ", ")))
	}
	if len(r.left) > 0 {
		reasons := make([]string, 0, len(r.left))
		for reason := range r.left {
			reasons = append(reasons, reason)
		}
		sort.Strings(reasons)
		var left []string
		for _, reason := range reasons {
			left = append(left, fmt.Sprintf("%d %s", r.left[reason], reason))
		}
		parts = append(parts, "Left as they were: "+strings.Join(left, "; ")+".")
	}
	return strings.Join(parts, " ")
}
