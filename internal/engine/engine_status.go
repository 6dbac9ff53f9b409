package engine

import (
	"context"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// WorkflowStatus is Workflow::status for one workflow (uncached).
func (e *Engine) WorkflowStatus(ctx context.Context, workflowID int64) (*workflow.StatusReport, error) {
	row, err := e.store.GetWorkflow(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	keys, err := e.store.ArtifactKeys(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	return e.statusFromRow(ctx, row, keys, true)
}

// ListWorkflows is Workflow::list with filters: newest first, without
// wait details.
func (e *Engine) ListWorkflows(ctx context.Context, f store.WorkflowFilter) ([]*workflow.StatusReport, error) {
	rows, err := e.store.ListWorkflows(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]*workflow.StatusReport, 0, len(rows))
	for i := range rows {
		keys, err := e.store.ArtifactKeys(ctx, rows[i].ID)
		if err != nil {
			return nil, err
		}
		r, err := e.statusFromRow(ctx, &rows[i], keys, false)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func strPtr(s string) *string { return &s }

// statusFromRow is build_workflow_state_from_row.
func (e *Engine) statusFromRow(ctx context.Context, row *store.WorkflowRow, artifactKeys []string, details bool) (*workflow.StatusReport, error) {
	state, err := workflow.ParseState([]byte(row.State))
	if err != nil {
		return corruptReport(row, artifactKeys, err), nil
	}
	r := rowReport(row, artifactKeys)
	r.State = phpjson.ObjectValue(state.Public())
	if v, ok := state.DefinitionVersion(); ok {
		r.DefinitionVersion = &v
	}
	if v, ok := state.DefinitionHash(); ok {
		r.DefinitionHash = &v
	}
	if v, ok := state.IdempotencyKey(); ok {
		r.IdempotencyKey = &v
	}
	if b, err := budgetSummary(state); err != nil {
		return nil, err
	} else if b != nil {
		r.Budget = phpjson.ObjectValue(b)
	}
	if step, ok := state.Step(row.CurrentStep); ok {
		if name, ok := phpjson.Get(step.Object(), "name").AsString(); ok && !step.IsLegacy() {
			r.CurrentStepName = &name
		}
		r.CurrentStepType = strPtr(string(step.Type()))
	}
	wait, waiting := state.Wait()
	if waiting {
		if wait.Raw != nil {
			if t, ok := phpjson.Get(wait.Raw, "type").AsString(); ok {
				r.WaitType = &t
			}
			wf := phpjson.Get(wait.Raw, "waiting_for")
			if wf.IsNull() {
				wf = phpjson.Get(wait.Raw, "signal_names")
			}
			if phpjson.IsArray(wf) {
				r.WaitingFor = []string{}
				for _, v := range phpjson.Values(wf) {
					r.WaitingFor = append(r.WaitingFor, phpjson.ToString(v))
				}
			}
			if m, ok := phpjson.Get(wait.Raw, "wait_mode").AsString(); ok {
				r.WaitMode = &m
			}
		} else {
			r.WaitType = strPtr(wait.Type)
			r.WaitingFor = wait.WaitingFor
		}
		if details {
			d, err := e.waitDetails(ctx, row.ID, state, row.CurrentStep, wait)
			if err != nil {
				return nil, err
			}
			r.WaitDetails = phpjson.ObjectValue(d)
		}
	}
	if details {
		acts, err := e.LocalActivities(ctx, row.ID)
		if err != nil {
			return nil, err
		}
		r.LocalActivities = acts
	}
	return r, nil
}

// rowReport is the part of a status report read from the row's columns.
func rowReport(row *store.WorkflowRow, artifactKeys []string) *workflow.StatusReport {
	r := &workflow.StatusReport{
		WorkflowID: row.ID, Name: row.Name, Status: workflow.Status(row.Status),
		CurrentStep: row.CurrentStep, TotalSteps: row.TotalSteps,
		State:       phpjson.Null(),
		Budget:      phpjson.Null(),
		WaitDetails: phpjson.Null(),
		StartedAt:   row.StartedAt.UTC().Format("2006-01-02 15:04:05"),
	}
	if row.ParentWorkflowID.Valid && row.ParentWorkflowID.Int64 != 0 {
		r.ParentWorkflowID = &row.ParentWorkflowID.Int64
	}
	if row.ParentStepIndex.Valid {
		r.ParentStepIndex = &row.ParentStepIndex.Int64
	}
	if row.CompletedAt.Valid {
		r.CompletedAt = strPtr(store.DateTime(row.CompletedAt.Time))
	}
	if row.FailedAt.Valid {
		r.FailedAt = strPtr(store.DateTime(row.FailedAt.Time))
	}
	if row.DeadlineAt.Valid {
		r.DeadlineAt = strPtr(store.DateTime(row.DeadlineAt.Time))
	}
	if row.ErrorMessage.Valid {
		r.ErrorMessage = &row.ErrorMessage.String
	}
	n := len(artifactKeys)
	r.ArtifactCount, r.ArtifactKeys = &n, artifactKeys
	return r
}

// corruptReport reports a row whose state cannot be read: its columns, a
// null state and the reason. The plugin decodes such a state as an empty
// array and lists the row as if it had no state (docs/compat.md).
func corruptReport(row *store.WorkflowRow, artifactKeys []string, err error) *workflow.StatusReport {
	r := rowReport(row, artifactKeys)
	r.Corrupt = err.Error()
	return r
}

// budgetSummary is budget_summary_from_state (nil without limits).
func budgetSummary(state *workflow.State) (*phpjson.Object, error) {
	b := state.WorkflowBudget()
	if b.IsZero() {
		return nil, nil
	}
	o := phpjson.CloneObject(phpjson.AsArray(b.Value()))
	c := state.WorkflowCounters()
	size, err := publicSize(state)
	if err != nil {
		return nil, err
	}
	o.Set("transitions", phpjson.Int(c.Transitions))
	o.Set("cost_units", phpjson.Int(c.CostUnits))
	o.Set("started_workflows", phpjson.Int(c.StartedWorkflows))
	o.Set("public_state_bytes", phpjson.Int(size))
	return o, nil
}

// waitDetails is wait_details_from_state.
func (e *Engine) waitDetails(ctx context.Context, workflowID int64, state *workflow.State, current int, wait workflow.Wait) (*phpjson.Object, error) {
	out := phpjson.NewObject()
	step, ok := state.Step(current)
	if !ok || step.IsLegacy() {
		if wait.Raw != nil {
			phpjson.SetUnlessNull(out, "step_name", phpjson.Get(wait.Raw, "step_name"))
			phpjson.SetUnlessNull(out, "result_key", phpjson.Get(wait.Raw, "result_key"))
		}
		return out, nil
	}
	var err error
	if k, ok := e.kinds.byWaitType[wait.Type]; ok {
		out, err = k.WaitDetails(ctx, &WaitDetailsParams{Engine: e, WorkflowID: workflowID, Step: step, State: state})
	}
	if err != nil {
		return nil, err
	}
	if wait.Raw != nil {
		phpjson.SetUnlessNull(out, "wait_mode", phpjson.Get(wait.Raw, "wait_mode"))
	}
	return out, nil
}
