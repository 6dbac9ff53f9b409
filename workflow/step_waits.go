package workflow

import (
	"github.com/queuety-go/queuety/internal/phpjson"
)

// WaitForSignalStep parks the workflow until named signals arrive (builder:
// wait_for_signal(), wait_for_signals(), wait_for_approval(),
// wait_for_decision(), wait_for_input()).
type WaitForSignalStep struct {
	StepCommon
	// SignalNames are the names waited for: "signal_names" when it is a
	// list, else the single "signal_name"; trimmed, blanks dropped.
	SignalNames []string
	Mode        WaitMode
	// ResultKey nests the payload(s) under one state key ("" = merge the
	// payload keys into the top level).
	ResultKey string
	// MatchPayload is a subset every counted signal payload must contain
	// (empty = any payload).
	MatchPayload *phpjson.Object
	// CorrelationKey must have the same value in the payload and the
	// workflow state ("" = none).
	CorrelationKey string
	// HumanWait is set by the approval/decision/input helpers.
	HumanWait HumanWait
	// DecisionMap maps signal name to outcome for decisions (empty = none).
	DecisionMap *phpjson.Object
}

// Type implements StepDefinition.
func (*WaitForSignalStep) Type() StepType { return StepWaitForSignal }

func (s Step) waitForSignalDef(c StepCommon) *WaitForSignalStep {
	w := &WaitForSignalStep{
		StepCommon:     c,
		Mode:           parseWaitMode(waitModeString(s.field("wait_mode"))),
		ResultKey:      phpjson.OptionalString(s.field("result_key")),
		MatchPayload:   phpjson.AsArray(s.field("match_payload")),
		CorrelationKey: phpjson.OptionalString(s.field("correlation_key")),
		DecisionMap:    phpjson.NewObject(),
	}
	if names := s.field("signal_names"); phpjson.IsArray(names) {
		for _, n := range phpjson.Values(names) {
			if name := phpjson.Trim(phpjson.ToString(n)); name != "" {
				w.SignalNames = append(w.SignalNames, name)
			}
		}
	} else if name := phpjson.Trim(phpjson.ToString(s.field("signal_name"))); name != "" {
		w.SignalNames = []string{name}
	}
	if h, ok := s.field("human_wait").AsString(); ok {
		w.HumanWait = HumanWait(h)
	}
	if m := s.field("decision_map"); phpjson.IsArray(m) {
		w.DecisionMap = phpjson.AsArray(m)
	}
	return w
}

// waitModeString reads wait_mode like to_string($def['wait_mode'] ?? 'all').
func waitModeString(v phpjson.Value) string {
	if v.IsNull() {
		return string(WaitAll)
	}
	return phpjson.ToString(v)
}

// WaitForWorkflowsStep parks the workflow until other workflows finish
// (builder: wait_for_workflow(s), wait_for_workflow_group(),
// wait_for_agents(), wait_for_agent_group()).
type WaitForWorkflowsStep struct {
	StepCommon
	// WorkflowIDs is the literal id list (normalized: ints > 0, first
	// occurrence kept); HasWorkflowIDs is false when "workflow_ids" is not
	// a list, and then a group or a state key supplies the ids.
	WorkflowIDs    []int64
	HasWorkflowIDs bool
	// WorkflowIDKey is a public state key holding an id or a list of ids.
	WorkflowIDKey string
	// WorkflowGroupKey names a group started by start_workflows/start_agents.
	WorkflowGroupKey string
	Mode             WaitMode
	// Quorum is the number of completed dependencies WaitQuorum needs;
	// 0 when unset (the runtime then needs 1).
	Quorum int64
	// ResultKey nests the dependencies' public state under one key ("" =
	// merge their keys into the top level).
	ResultKey string
}

// Type implements StepDefinition.
func (*WaitForWorkflowsStep) Type() StepType { return StepWaitForWorkflows }

func (s Step) waitForWorkflowsDef(c StepCommon) *WaitForWorkflowsStep {
	w := &WaitForWorkflowsStep{
		StepCommon:       c,
		WorkflowIDKey:    phpjson.Trim(phpjson.ToString(s.field("workflow_id_key"))),
		WorkflowGroupKey: phpjson.OptionalString(s.field("workflow_group_key")),
		Mode:             parseWaitMode(waitModeString(s.field("wait_mode"))),
		ResultKey:        phpjson.OptionalString(s.field("result_key")),
	}
	if ids := s.field("workflow_ids"); phpjson.IsArray(ids) {
		w.WorkflowIDs, w.HasWorkflowIDs = normalizeWorkflowIDs(ids), true
	}
	if q := s.field("quorum"); !q.IsNull() {
		if n := phpjson.ToInt(q); n > 0 {
			w.Quorum = n
		}
	}
	return w
}

// ResolveIDs returns the dependency ids for state, re-resolved on every
// evaluation as the runtime does: the literal list; else the group (from
// _workflow_groups, falling back to a state key of that name); else the
// state key. The result may be empty.
func (w *WaitForWorkflowsStep) ResolveIDs(state *State) []int64 {
	if w.HasWorkflowIDs {
		return w.WorkflowIDs
	}
	if w.WorkflowGroupKey != "" {
		if groups, ok := state.Get(KeyWorkflowGroups); ok && phpjson.IsArray(groups) {
			if ids, ok := phpjson.AsArray(groups).Get(w.WorkflowGroupKey); ok {
				return normalizeWorkflowIDs(ids)
			}
		}
		if ids, ok := state.Get(w.WorkflowGroupKey); ok {
			return normalizeWorkflowIDs(ids)
		}
		return nil
	}
	if w.WorkflowIDKey == "" {
		return nil
	}
	return normalizeWorkflowIDs(state.field(w.WorkflowIDKey))
}

// normalizeWorkflowIDs is Workflow::normalize_workflow_ids: one id or a
// list of ids, as ints > 0, duplicates dropped keeping the first.
func normalizeWorkflowIDs(v phpjson.Value) []int64 {
	if !phpjson.IsArray(v) {
		if id := phpjson.ToInt(v); id > 0 {
			return []int64{id}
		}
		return nil
	}
	var ids []int64
	seen := map[int64]bool{}
	for _, e := range phpjson.Values(v) {
		if id := phpjson.ToInt(e); id > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
