package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// runForEachPlaceholder is handle_for_each_step: initialize the runtime
// from the items in state, then dispatch one branch job per item not yet
// settled (or settle at once when none is left). The worker's `completed`
// log of the placeholder is written in the same transaction.
func (e *Engine) runForEachPlaceholder(ctx context.Context, job *store.JobRow, tr *jobTrace, start time.Time) error {
	a, err := e.stepTx(ctx, tr, 0, func(a *advanceTx) error {
		tx := a.tx
		logged, err := a.forEachPlaceholder(job)
		if err != nil || !logged {
			return err
		}
		return tx.InsertLogs(e.completedLog(job, job.WorkflowID.Int64, int(job.StepIndex.Int64), time.Since(start)))
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	return e.afterCommit(ctx, a)
}

func (a *advanceTx) forEachPlaceholder(job *store.JobRow) (logCompletion bool, err error) {
	stepIndex := int(job.StepIndex.Int64)
	if a.wf, err = a.tx.LockWorkflow(job.WorkflowID.Int64); err != nil || a.wf == nil {
		return false, err
	}
	if err := a.loadState(); err != nil {
		return false, err
	}
	step, ok := a.step(stepIndex)
	if !ok || step.IsLegacy() || toString(step.field("type")) != string(StepForEach) {
		return false, runtimeErrorf("Step %d is not a for_each definition.", stepIndex)
	}
	def, err := forEachDef(step)
	if err != nil {
		return false, err
	}
	if a.job, err = a.tx.LockJob(job.ID); err != nil {
		return false, err
	}
	if a.job == nil || a.job.Status != store.StatusProcessing {
		return false, nil
	}
	if a.current != stepIndex || !liveStatus(a.wf.Status) {
		return true, a.tx.CompleteJobAny(a.job.ID)
	}

	rt, ok := a.state.forEachRuntime(stepIndex)
	if !ok {
		itemsKey := toString(step.field("items_key"))
		items := phpjson.List()
		if itemsKey != "" {
			if v, present := a.state.Get(itemsKey); present && !v.IsNull() {
				items = v
			}
		}
		if !isArray(items) {
			return false, runtimeErrorf("For-each step '%s' expected state key '%s' to contain an array.", toString(step.field("name")), itemsKey)
		}
		values := phpValues(items)
		if limit := a.state.WorkflowBudget().MaxForEachItems; limit > 0 && int64(len(values)) > limit {
			return false, &ConstraintViolation{fmt.Sprintf("For-each step '%s' planned %d items, exceeding max_for_each_items budget of %d.",
				toString(step.field("name")), len(values), limit)}
		}
		rt = phpjson.NewObject()
		rt.Set("initialized", phpjson.Bool(true))
		rt.Set("items", phpjson.List(values...))
		rt.Set("results", phpjson.List())
		rt.Set("failures", phpjson.List())
		rt.Set("winner_index", phpjson.Null())
	} else {
		normalizeForEachRuntime(rt)
	}

	items := phpValues(get(rt, "items"))
	results, failures := phpArray(get(rt, "results")), phpArray(get(rt, "failures"))
	var missing []int
	for i := range items {
		if _, r := results.Get(itoa(i)); r {
			continue
		}
		if _, f := failures.Get(itoa(i)); f {
			continue
		}
		missing = append(missing, i)
	}
	a.state.setForEachRuntime(stepIndex, rt)

	if len(missing) == 0 {
		switch {
		case forEachSatisfied(def, rt):
			out, err := a.e.forEachOutput(a.ctx, a.state, step, def, rt, stepIndex)
			if err != nil {
				return false, err
			}
			return true, a.finalize(out, false)
		case forEachImpossible(def, rt):
			// PHP leaves the placeholder processing here (it buries every
			// other job of the workflow); we complete it (docs/compat.md).
			if err := a.failLocked(a.job.ID, msgForEachImpossible); err != nil {
				return false, err
			}
			return true, a.tx.CompleteJob(a.job.ID)
		default:
			if err := a.tx.CompleteJob(a.job.ID); err != nil {
				return false, err
			}
			return true, a.persistState()
		}
	}

	defaults := a.state.DispatchDefaults()
	handler := def.Class
	var jobs []StepJob
	for _, i := range missing {
		meta := phpjson.NewObject()
		meta.Set("item_index", phpjson.Int(int64(i)))
		meta.Set("item", items[i])
		payload := phpjson.NewObject().Set("__for_each", phpjson.ObjectValue(meta))
		opts := ResolveStepDispatchOptions(step.Object(), handler, defaults, payload, 1, metadataFor(a.e.metadata(), handler))
		j, err := newStepJob(handler, stepIndex, opts, nil)
		if err != nil {
			return false, err
		}
		jobs = append(jobs, j)
	}
	if err := a.tx.InsertStepJobs(a.wf.ID, storeJobs(jobs)); err != nil {
		return false, err
	}
	if err := a.persistState(); err != nil {
		return false, err
	}
	return true, a.tx.CompleteJob(a.job.ID)
}
