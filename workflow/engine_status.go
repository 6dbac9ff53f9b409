package workflow

import (
	"context"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// StatusReport is Queuety's WorkflowState (Queuety::workflow_status, spec
// §8) plus the row's step type, timestamps and error. JSON field names are
// the PHP property names; absent values are null.
type StatusReport struct {
	WorkflowID  int64  `json:"workflow_id"`
	Name        string `json:"name"`
	Status      Status `json:"status"`
	CurrentStep int    `json:"current_step"`
	TotalSteps  int    `json:"total_steps"`
	// State is the public state (no "_" keys).
	State            phpjson.Value `json:"state"`
	ParentWorkflowID *int64        `json:"parent_workflow_id"`
	ParentStepIndex  *int64        `json:"parent_step_index"`
	// WaitType is _wait.type ("signal", "workflow") or "wait_for_signal"
	// for the legacy _waiting_for_signal.
	WaitType   *string  `json:"wait_type"`
	WaitingFor []string `json:"waiting_for"`
	// DefinitionVersion, DefinitionHash, IdempotencyKey: reserved keys.
	DefinitionVersion *string `json:"definition_version"`
	DefinitionHash    *string `json:"definition_hash"`
	IdempotencyKey    *string `json:"idempotency_key"`
	// Budget is null, or the limits plus transitions, cost_units,
	// started_workflows and public_state_bytes.
	Budget          phpjson.Value `json:"budget"`
	CurrentStepName *string       `json:"current_step_name"`
	WaitMode        *string       `json:"wait_mode"`
	// WaitDetails are the live details of the wait (matched, remaining,
	// failed, step_name, result_key, quorum, group_key, ...); null when not
	// waiting or in lists.
	WaitDetails   phpjson.Value `json:"wait_details"`
	ArtifactCount *int          `json:"artifact_count"`
	ArtifactKeys  []string      `json:"artifact_keys"`

	// Go additions: the current step's type, the row's timestamps (UTC,
	// "YYYY-MM-DD HH:MM:SS") and error.
	CurrentStepType *string `json:"current_step_type"`
	StartedAt       string  `json:"started_at"`
	CompletedAt     *string `json:"completed_at"`
	FailedAt        *string `json:"failed_at"`
	DeadlineAt      *string `json:"deadline_at"`
	ErrorMessage    *string `json:"error_message"`
	// LocalActivities are the workflow's local activity executions with
	// execution_mode, local_activity and their attempts (WorkflowStatus
	// only; omitted when there are none).
	LocalActivities []LocalActivityView `json:"local_activities,omitempty"`
	// Corrupt says why the stored state cannot be read (not JSON, nested
	// too deep, not an object); omitted for a readable row. A corrupt row
	// is still reported, with its status as stored and a null state, so
	// one bad row never hides the others from a list.
	Corrupt string `json:"corrupt,omitempty"`
}

// WorkflowStatus is Workflow::status for one workflow (uncached).
func (e *Engine) WorkflowStatus(ctx context.Context, workflowID int64) (*StatusReport, error) {
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
func (e *Engine) ListWorkflows(ctx context.Context, f store.WorkflowFilter) ([]*StatusReport, error) {
	rows, err := e.store.ListWorkflows(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]*StatusReport, 0, len(rows))
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
func (e *Engine) statusFromRow(ctx context.Context, row *store.WorkflowRow, artifactKeys []string, details bool) (*StatusReport, error) {
	state, err := ParseState([]byte(row.State))
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
		if name, ok := step.field("name").AsString(); ok && !step.IsLegacy() {
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
func rowReport(row *store.WorkflowRow, artifactKeys []string) *StatusReport {
	r := &StatusReport{
		WorkflowID: row.ID, Name: row.Name, Status: Status(row.Status),
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
func corruptReport(row *store.WorkflowRow, artifactKeys []string, err error) *StatusReport {
	r := rowReport(row, artifactKeys)
	r.Corrupt = err.Error()
	return r
}

// budgetSummary is budget_summary_from_state (nil without limits).
func budgetSummary(state *State) (*phpjson.Object, error) {
	b := state.WorkflowBudget()
	if b.IsZero() {
		return nil, nil
	}
	o := phpjson.CloneObject(phpjson.AsArray(b.Value()))
	c := state.WorkflowCounters()
	size, err := state.publicSize()
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
func (e *Engine) waitDetails(ctx context.Context, workflowID int64, state *State, current int, wait Wait) (*phpjson.Object, error) {
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
		out, err = k.WaitDetails(ctx, e, workflowID, step, state)
	}
	if err != nil {
		return nil, err
	}
	if wait.Raw != nil {
		phpjson.SetUnlessNull(out, "wait_mode", phpjson.Get(wait.Raw, "wait_mode"))
	}
	return out, nil
}
