package workflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Child workflows (spec §5): start_workflows / start_agents start
// independent top-level workflows and continue at once; run_workflow
// starts one nested child (parent columns set) and parks the parent until
// the child completes (on_workflow_completed, engine_terminal.go).

// insertChild writes a dispatched child in the transaction.
func (e *Engine) insertChild(tx *store.WorkflowTx, d *Dispatch) (int64, error) {
	return tx.InsertChildWorkflow(store.InsertWorkflow{
		Name:             d.Workflow.Name,
		State:            d.Workflow.State,
		TotalSteps:       d.Workflow.TotalSteps,
		ParentWorkflowID: d.Workflow.ParentWorkflowID,
		ParentStepIndex:  d.Workflow.ParentStepIndex,
		DeadlineAt:       d.Workflow.DeadlineAt(e.store.Now()),
		Queue:            d.Queue,
		Jobs:             storeJobs(d.Jobs),
	})
}

// runStartWorkflows runs __queuety_start_workflows:
// handle_start_workflows_step, then advance_step with its output, then the
// worker's second `completed` log. Unlike PHP (each child its own
// transaction, then the parent's), the children and the parent's step
// commit together, so a crash cannot start them twice; and they are only
// started when the step can still settle (the advance guards pass).
func (e *Engine) runStartWorkflows(ctx context.Context, job *store.JobRow, tr *jobTrace, start time.Time) error {
	index := int(job.StepIndex.Int64)
	a, err := e.stepTx(ctx, tr, 0, func(a *advanceTx) error {
		tx := a.tx
		out := phpjson.NewObject()
		if err := a.lock(job.WorkflowID.Int64, job.ID); err != nil {
			return err
		}
		if liveStatus(a.wf.Status) && completable(a.job.Status) && a.wf.CurrentStep == index {
			if err := a.loadState(); err != nil {
				return err
			}
			var err error
			if out, err = a.startWorkflows(index); err != nil {
				return err
			}
		}
		d := time.Since(start)
		if err := a.run(job.WorkflowID.Int64, job.ID, out); err != nil {
			return err
		}
		return tx.InsertLogs(e.completedLog(job, job.WorkflowID.Int64, index, d))
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	return e.afterCommit(ctx, a)
}

// startWorkflows is handle_start_workflows_step on the locked workflow:
// one child per item, dispatched from the step's definition bundle; the
// output holds the ids under result_key, the group under _workflow_groups
// and the budget delta.
func (a *advanceTx) startWorkflows(index int) (*phpjson.Object, error) {
	step, ok := a.step(index)
	if !ok || step.IsLegacy() || toString(step.field("type")) != string(StepStartWorkflows) {
		return nil, runtimeErrorf("Step %d is not a start_workflows definition.", index)
	}
	name := toString(step.field("name"))
	itemsKey := phpTrim(toString(step.field("items_key")))
	items := phpjson.List()
	if itemsKey != "" {
		if v, ok := a.state.Get(itemsKey); ok && !v.IsNull() {
			items = v
		}
	}
	if !isArray(items) {
		return nil, runtimeErrorf("Start step '%s' requires state['%s'] to be an array.", name, itemsKey)
	}
	raw := step.field("workflow_definition")
	if !isArray(raw) || !isArray(get(phpArray(raw), "steps")) {
		return nil, runtimeErrorf("Start step '%s' is missing a valid workflow definition.", name)
	}
	def, err := ParseRuntimeDefinition(raw)
	if err != nil {
		return nil, runtimeErrorf("Start step '%s' is missing a valid workflow definition.", name)
	}
	resultKey, payloadKey := "started_workflow_ids", "item"
	if v := step.field("result_key"); !v.IsNull() {
		resultKey = phpTrim(toString(v))
	}
	if v := step.field("payload_key"); !v.IsNull() {
		payloadKey = phpTrim(toString(v))
	}
	groupKey := phpTrim(toString(step.field("group_key")))
	base := phpjson.NewObject()
	if truthy(step.field("inherit_state")) {
		base = a.state.Public()
	}
	base.Delete(itemsKey)
	base.Delete(resultKey)
	values := phpValues(items)
	if limit := a.state.WorkflowBudget().MaxStartedWorkflows; limit > 0 &&
		a.state.WorkflowCounters().StartedWorkflows+int64(len(values)) > limit {
		label := name
		if label == "" {
			label = itoa(index)
		}
		return nil, &ConstraintViolation{fmt.Sprintf("Start step '%s' would exceed max_started_workflows budget of %d.", label, limit)}
	}
	ids := make([]phpjson.Value, 0, len(values))
	for i, item := range values {
		child := cloneObject(base)
		if isArray(item) {
			for k, v := range phpArray(item).All() {
				if !isPHPIntKey(k) && !strings.HasPrefix(k, "_") {
					child.Set(k, v)
				}
			}
		} else {
			child.Set(payloadKey, item)
		}
		child.Set("start_item_index", phpjson.Int(int64(i)))
		d, err := def.Dispatch(child, DefinitionDispatchOptions{
			StartedByWorkflowID: sql.NullInt64{Int64: a.wf.ID, Valid: true},
			StartedByStepIndex:  sql.NullInt64{Int64: int64(index), Valid: true},
			HandlerMetadata:     a.e.metadata(),
		})
		if err != nil {
			return nil, err
		}
		id, err := a.e.insertChild(a.tx, d)
		if err != nil {
			return nil, err
		}
		ids = append(ids, phpjson.Int(id))
	}
	out := phpjson.NewObject().Set(resultKey, phpjson.List(ids...))
	if groupKey != "" {
		groups := phpjson.NewObject()
		if g := a.state.field(KeyWorkflowGroups); isArray(g) {
			groups = cloneObject(phpArray(g))
		}
		groups.Set(groupKey, phpjson.List(ids...))
		out.Set(KeyWorkflowGroups, phpjson.ObjectValue(groups))
	}
	if len(ids) > 0 {
		out.Set(KeyWorkflowBudgetDelta, phpjson.ObjectValue(phpjson.NewObject().Set("started_workflows", phpjson.Int(int64(len(ids))))))
	}
	return out, nil
}

// runRunWorkflow runs __queuety_run_workflow (handle_run_workflow_step):
// the child is dispatched with the parent's public state and the parent
// columns, the placeholder is completed and logged, and the parent stays
// at the step with no job until the child completes. Unlike PHP, a
// placeholder of a workflow that is no longer live or has moved on starts
// no child (it is buried as advance_step's guards bury stale jobs).
func (e *Engine) runRunWorkflow(ctx context.Context, job *store.JobRow, tr *jobTrace, start time.Time) error {
	index := int(job.StepIndex.Int64)
	a, err := e.stepTx(ctx, tr, 0, func(a *advanceTx) error {
		tx := a.tx
		if err := a.lock(job.WorkflowID.Int64, job.ID); err != nil {
			return err
		}
		if err := a.loadState(); err != nil {
			return err
		}
		step, ok := a.step(index)
		if !ok || step.IsLegacy() || toString(step.field("type")) != string(StepRunWorkflow) {
			return runtimeErrorf("Step %d is not a run_workflow definition.", index)
		}
		if !liveStatus(a.wf.Status) || a.wf.CurrentStep != index {
			if completable(a.job.Status) {
				return tx.BuryJob(job.ID, msgAdvancedBefore)
			}
			return nil
		}
		def := step.runWorkflowDef(StepCommon{})
		d, err := def.ChildDefinition(a.state).Dispatch(a.state.Public(), DefinitionDispatchOptions{
			ParentWorkflowID: sql.NullInt64{Int64: a.wf.ID, Valid: true},
			ParentStepIndex:  sql.NullInt64{Int64: int64(index), Valid: true},
			HandlerMetadata:  e.metadata(),
		})
		if err != nil {
			return err
		}
		if _, err := e.insertChild(tx, d); err != nil {
			return err
		}
		if err := tx.CompleteJobAny(job.ID); err != nil {
			return err
		}
		return tx.InsertLogs(e.completedLog(job, job.WorkflowID.Int64, index, time.Since(start)))
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	return e.afterCommit(ctx, a)
}
