package steps

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// startWorkflows is a start_workflows step (builder: StartWorkflows,
// StartAgents; spec §5): its placeholder starts one independent top-level
// workflow per item, dispatched from the step's definition bundle, and the
// step settles at once.
type startWorkflows struct{}

func (startWorkflows) Type() workflow.StepType { return workflow.StepStartWorkflows }

func (startWorkflows) Placeholder() string { return workflow.HandlerStartWorkflows }

// Admit runs every claimed job.
func (startWorkflows) Admit(context.Context, *engine.AdmitParams) engine.Admission {
	return engine.Admission{}
}

// RunPlaceholder runs __queuety_start_workflows:
// handle_start_workflows_step, then advance_step with its output, then the
// worker's second `completed` log. Unlike PHP (each child its own
// transaction, then the parent's), the children and the parent's step
// commit together, so a crash cannot start them twice; and they are only
// started when the step can still settle (the advance guards pass).
func (startWorkflows) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	job, index := r.Job(), r.Index()
	_, err := r.Transact(ctx, func(a *engine.Advance) error {
		tx := a.Tx()
		out := phpjson.NewObject()
		if err := a.Lock(job.WorkflowID.Int64, job.ID); err != nil {
			return err
		}
		if workflow.IsLive(a.Workflow().Status) && workflow.IsCompletable(a.Job().Status) && a.Workflow().CurrentStep == index {
			if err := a.LoadState(); err != nil {
				return err
			}
			var err error
			if out, err = startChildren(a, index); err != nil {
				return err
			}
		}
		d := r.Elapsed()
		if err := a.AdvanceStep(ctx, job.WorkflowID.Int64, job.ID, out); err != nil {
			return err
		}
		return tx.InsertLogs(r.CompletedLog(d))
	})
	return err
}

// startChildren is handle_start_workflows_step on the locked workflow:
// one child per item, dispatched from the step's definition bundle; the
// output holds the ids under result_key, the group under _workflow_groups
// and the budget delta.
func startChildren(a *engine.Advance, index int) (*phpjson.Object, error) {
	step, ok := a.Step(index)
	if !ok || step.IsLegacy() || phpjson.ToString(field(step, "type")) != string(workflow.StepStartWorkflows) {
		return nil, runtimeErrorf("Step %d is not a start_workflows definition.", index)
	}
	name := phpjson.ToString(field(step, "name"))
	itemsKey := phpjson.Trim(phpjson.ToString(field(step, "items_key")))
	items := phpjson.List()
	if itemsKey != "" {
		if v, ok := a.State().Get(itemsKey); ok && !v.IsNull() {
			items = v
		}
	}
	if !phpjson.IsArray(items) {
		return nil, runtimeErrorf("Start step '%s' requires state['%s'] to be an array.", name, itemsKey)
	}
	raw := field(step, "workflow_definition")
	if !phpjson.IsArray(raw) || !phpjson.IsArray(phpjson.Get(phpjson.AsArray(raw), "steps")) {
		return nil, runtimeErrorf("Start step '%s' is missing a valid workflow definition.", name)
	}
	def, err := workflow.ParseRuntimeDefinition(raw)
	if err != nil {
		return nil, runtimeErrorf("Start step '%s' is missing a valid workflow definition.", name)
	}
	resultKey, payloadKey := "started_workflow_ids", "item"
	if v := field(step, "result_key"); !v.IsNull() {
		resultKey = phpjson.Trim(phpjson.ToString(v))
	}
	if v := field(step, "payload_key"); !v.IsNull() {
		payloadKey = phpjson.Trim(phpjson.ToString(v))
	}
	groupKey := phpjson.Trim(phpjson.ToString(field(step, "group_key")))
	base := phpjson.NewObject()
	if phpjson.Truthy(field(step, "inherit_state")) {
		base = a.State().Public()
	}
	base.Delete(itemsKey)
	base.Delete(resultKey)
	values := phpjson.Values(items)
	if limit := a.State().WorkflowBudget().MaxStartedWorkflows; limit > 0 &&
		a.State().WorkflowCounters().StartedWorkflows+int64(len(values)) > limit {
		label := name
		if label == "" {
			label = strconv.Itoa(index)
		}
		return nil, &workflow.ConstraintViolation{Message: fmt.Sprintf("Start step '%s' would exceed max_started_workflows budget of %d.", label, limit)}
	}
	ids := make([]phpjson.Value, 0, len(values))
	for i, item := range values {
		child := phpjson.CloneObject(base)
		if phpjson.IsArray(item) {
			for k, v := range phpjson.AsArray(item).All() {
				if !phpjson.IsIntKey(k) && !strings.HasPrefix(k, "_") {
					child.Set(k, v)
				}
			}
		} else {
			child.Set(payloadKey, item)
		}
		child.Set("start_item_index", phpjson.Int(int64(i)))
		d, err := def.Dispatch(child, workflow.DefinitionDispatchOptions{
			StartedByWorkflowID: sql.NullInt64{Int64: a.Workflow().ID, Valid: true},
			StartedByStepIndex:  sql.NullInt64{Int64: int64(index), Valid: true},
			HandlerMetadata:     a.Metadata(),
		})
		if err != nil {
			return nil, err
		}
		id, err := a.InsertChild(d)
		if err != nil {
			return nil, err
		}
		ids = append(ids, phpjson.Int(id))
	}
	out := phpjson.NewObject().Set(resultKey, phpjson.List(ids...))
	if groupKey != "" {
		groups := phpjson.NewObject()
		if g := stateField(a.State(), workflow.KeyWorkflowGroups); phpjson.IsArray(g) {
			groups = phpjson.CloneObject(phpjson.AsArray(g))
		}
		groups.Set(groupKey, phpjson.List(ids...))
		out.Set(workflow.KeyWorkflowGroups, phpjson.ObjectValue(groups))
	}
	if len(ids) > 0 {
		out.Set(workflow.KeyWorkflowBudgetDelta, phpjson.ObjectValue(phpjson.NewObject().Set("started_workflows", phpjson.Int(int64(len(ids))))))
	}
	return out, nil
}
