package workflow

import (
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// PHP's defaults for the agent aliases.
const (
	DefaultAgentIDsKey = "agent_workflow_ids"
	DefaultAgentGroup  = "agents"
	DefaultAgentResult = "agent_results"
)

// WaitForSignal adds a step that parks the workflow until the signal name
// arrives, or continues at once if it was already sent (wait_for_signal).
// Options: Named, ResultKey, MatchPayload, CorrelationKey.
func (b *Builder) WaitForSignal(name string, opts ...SignalOption) *Builder {
	c := collect(opts)
	if b.rejectOptions("wait_for_signal", c, unsupported{"wait mode", c.waitMode != nil}, unsupported{"Signal", c.signal != nil}, unsupported{"DecisionSignals", c.decision != nil}) {
		return b
	}
	// The default step name uses the name as given, untrimmed.
	return b.signalWait("wait_for_signal", []string{name}, WaitAll, c.resultKeyOr(phpjson.Null()), c.nameOr("wait_for_"+name), c, "", nil)
}

// WaitForSignals adds a step waiting for several signals, all of them
// (WaitAll, the default) or the first (WaitAny) (wait_for_signals).
func (b *Builder) WaitForSignals(names []string, opts ...SignalOption) *Builder {
	c := collect(opts)
	if b.rejectOptions("wait_for_signals", c, unsupported{"Signal", c.signal != nil}, unsupported{"DecisionSignals", c.decision != nil}) {
		return b
	}
	return b.signalWaitDefaultName("wait_for_signals", names, c.waitModeOr(WaitAll), c.resultKeyOr(phpjson.Null()), c.name, c)
}

// WaitForApproval adds a human approval wait (wait_for_approval): signal
// "approval" (Signal to change it), payload stored under "approval"
// (ResultKey / WithoutResultKey), step name "wait_for_approval".
func (b *Builder) WaitForApproval(opts ...SignalOption) *Builder {
	return b.humanWait("wait_for_approval", HumanWaitApproval, "approval", opts)
}

// WaitForInput adds a human input wait (wait_for_input): signal "input",
// payload stored under "input", step name "wait_for_input".
func (b *Builder) WaitForInput(opts ...SignalOption) *Builder {
	return b.humanWait("wait_for_input", HumanWaitInput, "input", opts)
}

func (b *Builder) humanWait(method string, kind HumanWait, def string, opts []SignalOption) *Builder {
	c := collect(opts)
	if b.rejectOptions(method, c, unsupported{"wait mode", c.waitMode != nil}, unsupported{"DecisionSignals", c.decision != nil}) {
		return b
	}
	signal := def
	if c.signal != nil {
		signal = *c.signal
	}
	return b.signalWait(method, []string{signal}, WaitAll, c.resultKeyOr(phpjson.String(def)), c.nameOr("wait_for_"+def), c, kind, nil)
}

// WaitForDecision adds an approve/reject wait (wait_for_decision): the
// first of "approved" or "rejected" (DecisionSignals to change them) wins,
// and {"outcome","signal","data"} is stored under "decision".
func (b *Builder) WaitForDecision(opts ...SignalOption) *Builder {
	c := collect(opts)
	if b.rejectOptions("wait_for_decision", c, unsupported{"wait mode", c.waitMode != nil}, unsupported{"Signal", c.signal != nil}) {
		return b
	}
	approve, reject := "approved", "rejected"
	if c.decision != nil {
		approve, reject = c.decision[0], c.decision[1]
	}
	// Keyed by the names as given; equal names collapse into one entry
	// (PHP array semantics: the second assignment wins, in place).
	decisionMap := phpjson.NewObject().
		Set(approve, phpjson.String("approved")).
		Set(reject, phpjson.String("rejected"))
	return b.signalWait("wait_for_decision", []string{approve, reject}, WaitAny, c.resultKeyOr(phpjson.String("decision")), c.nameOr("wait_for_decision"), c, HumanWaitDecision, decisionMap)
}

// signalWaitDefaultName resolves wait_for_signals' default step name, which
// depends on the normalized names.
func (b *Builder) signalWaitDefaultName(method string, names []string, mode WaitMode, resultKey phpjson.Value, name *string, c *stepConfig) *Builder {
	normalized := normalizeSignalNames(names)
	stepName := "wait_for_signals_" + strconv.Itoa(len(b.steps))
	if len(normalized) == 1 {
		stepName = "wait_for_" + normalized[0]
	}
	if name != nil {
		stepName = *name
	}
	return b.signalWait(method, names, mode, resultKey, stepName, c, "", nil)
}

func normalizeSignalNames(names []string) []string {
	var out []string
	for _, n := range names {
		if t := phpjson.Trim(n); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// signalWait adds a wait_for_signal step (the body of wait_for_signals).
func (b *Builder) signalWait(method string, names []string, mode WaitMode, resultKey phpjson.Value, stepName string, c *stepConfig, human HumanWait, decisionMap *phpjson.Object) *Builder {
	if !b.ok() {
		return b
	}
	normalized := normalizeSignalNames(names)
	if len(normalized) == 0 {
		return b.fail(method, RuntimeException, "Signal wait steps require at least one signal name.")
	}
	if mode == WaitQuorum {
		return b.fail(method, RuntimeException, "Signal wait steps support only all/any semantics.")
	}
	list := make([]phpjson.Value, len(normalized))
	for i, n := range normalized {
		list[i] = phpjson.String(n)
	}
	match := c.matchPayload
	if match == nil {
		match = phpjson.NewObject() // PHP's array(), written as []
	}
	humanWait, decision := phpjson.Null(), phpjson.Null()
	if human != "" {
		humanWait = phpjson.String(string(human))
	}
	if decisionMap != nil {
		decision = phpjson.ObjectValue(decisionMap)
	}
	return b.add(builderStep{typ: StepWaitForSignal, name: stepName, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepWaitForSignal))).
		Set("name", phpjson.String(stepName)).
		Set("signal_name", list[0]).
		Set("signal_names", phpjson.List(list...)).
		Set("wait_mode", phpjson.String(string(mode))).
		Set("result_key", resultKey).
		Set("match_payload", phpjson.ObjectValue(phpjson.CloneObject(match))).
		Set("correlation_key", nullString(c.correlationKey)).
		Set("human_wait", humanWait).
		Set("decision_map", decision))})
}

// WorkflowSource says which workflows a wait depends on: a literal id
// list (WorkflowIDs) or a public state key holding an id or a list of ids
// (WorkflowIDsFrom), PHP's int|array|string parameter.
type WorkflowSource struct {
	ids     []int64
	key     string
	fromKey bool
	set     bool
}

// WorkflowIDs waits on these workflow ids (ids ≤ 0 are dropped, as PHP's
// (int) > 0 filter does; duplicates are kept in the definition).
func WorkflowIDs(ids ...int64) WorkflowSource {
	return WorkflowSource{ids: ids, set: true}
}

// WorkflowIDsFrom waits on the id or ids found under a public state key
// when the step runs.
func WorkflowIDsFrom(stateKey string) WorkflowSource {
	return WorkflowSource{key: stateKey, fromKey: true, set: true}
}

// WaitForWorkflow adds a step that waits for one workflow and stores its
// public state (wait_for_workflow). Options: Named, ResultKey.
func (b *Builder) WaitForWorkflow(src WorkflowSource, opts ...WorkflowWaitOption) *Builder {
	c := collect(opts)
	if b.rejectOptions("wait_for_workflow", c, unsupported{"wait mode", c.waitMode != nil}, unsupported{"Quorum", c.quorum != nil}) {
		return b
	}
	return b.workflowWait("wait_for_workflow", src, WaitAll, c.resultKeyOr(phpjson.Null()), c.nameOr("wait_for_workflow"), nil)
}

// WaitForWorkflows adds a step that waits for other workflows: all of them
// (WaitAll, default), the first (WaitAny) or a Quorum (WaitQuorum with
// Quorum(n)) (wait_for_workflows).
func (b *Builder) WaitForWorkflows(src WorkflowSource, opts ...WorkflowWaitOption) *Builder {
	c := collect(opts)
	return b.workflowWait("wait_for_workflows", src, c.waitModeOr(WaitAll), c.resultKeyOr(phpjson.Null()), c.nameOr("wait_for_workflows_"+strconv.Itoa(len(b.steps))), c.quorum)
}

// WaitForAgents is WaitForWorkflows with the agent defaults (wait_for_agents):
// ids from "agent_workflow_ids" when src is the zero WorkflowSource,
// results under "agent_results", step name "wait_for_agents".
func (b *Builder) WaitForAgents(src WorkflowSource, opts ...WorkflowWaitOption) *Builder {
	if !src.set {
		src = WorkflowIDsFrom(DefaultAgentIDsKey)
	}
	c := collect(opts)
	return b.workflowWait("wait_for_agents", src, c.waitModeOr(WaitAll), c.resultKeyOr(phpjson.String(DefaultAgentResult)), c.nameOr("wait_for_agents"), c.quorum)
}

func (c *stepConfig) waitModeOr(def WaitMode) WaitMode {
	if c.waitMode != nil {
		return *c.waitMode
	}
	return def
}

// workflowWait adds a wait_for_workflows step on an id list or state key.
func (b *Builder) workflowWait(method string, src WorkflowSource, mode WaitMode, resultKey phpjson.Value, name string, quorum *int64) *Builder {
	if !b.ok() {
		return b
	}
	if !src.set {
		return b.failf(method, "%s() needs WorkflowIDs(...) or WorkflowIDsFrom(key)", method)
	}
	if mode == WaitQuorum {
		if quorum == nil || *quorum < 1 {
			return b.fail(method, RuntimeException, "Workflow quorum waits require a quorum of at least 1.")
		}
	} else {
		quorum = nil // PHP only stores a quorum for quorum waits
	}
	ids, key := phpjson.Null(), phpjson.Null()
	if src.fromKey {
		k := phpjson.Trim(src.key)
		if k == "" {
			return b.fail(method, RuntimeException, "Workflow wait steps require a non-empty state key.")
		}
		key = phpjson.String(k)
	} else {
		list := []phpjson.Value{}
		for _, id := range src.ids {
			if id > 0 {
				list = append(list, phpjson.Int(id))
			}
		}
		ids = phpjson.List(list...)
	}
	return b.add(workflowWaitStep(name, ids, key, phpjson.Null(), mode, quorum, resultKey))
}

// WaitForWorkflowGroup adds a step that waits for the workflows a start
// step recorded under group (wait_for_workflow_group).
func (b *Builder) WaitForWorkflowGroup(group string, opts ...WorkflowWaitOption) *Builder {
	c := collect(opts)
	return b.groupWait("wait_for_workflow_group", group, c.waitModeOr(WaitAll), c.quorum, c.resultKeyOr(phpjson.Null()), c.nameOr("wait_for_workflow_group_"+strconv.Itoa(len(b.steps))))
}

// WaitForAgentGroup is WaitForWorkflowGroup with the agent defaults
// (wait_for_agent_group): group "agents" when group is "", results under
// "agent_results", step name "wait_for_agent_group".
func (b *Builder) WaitForAgentGroup(group string, opts ...WorkflowWaitOption) *Builder {
	if group == "" {
		group = DefaultAgentGroup
	}
	c := collect(opts)
	return b.groupWait("wait_for_agent_group", group, c.waitModeOr(WaitAll), c.quorum, c.resultKeyOr(phpjson.String(DefaultAgentResult)), c.nameOr("wait_for_agent_group"))
}

func (b *Builder) groupWait(method, group string, mode WaitMode, quorum *int64, resultKey phpjson.Value, name string) *Builder {
	if !b.ok() {
		return b
	}
	group = phpjson.Trim(group)
	if group == "" {
		return b.fail(method, RuntimeException, "Workflow group waits require a non-empty group key.")
	}
	if mode == WaitQuorum && (quorum == nil || *quorum < 1) {
		return b.fail(method, RuntimeException, "Workflow quorum waits require a quorum of at least 1.")
	}
	if mode != WaitQuorum {
		quorum = nil
	}
	return b.add(workflowWaitStep(name, phpjson.Null(), phpjson.Null(), phpjson.String(group), mode, quorum, resultKey))
}

func workflowWaitStep(name string, ids, key, group phpjson.Value, mode WaitMode, quorum *int64, resultKey phpjson.Value) builderStep {
	return builderStep{typ: StepWaitForWorkflows, name: name, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepWaitForWorkflows))).
		Set("name", phpjson.String(name)).
		Set("workflow_ids", ids).
		Set("workflow_id_key", key).
		Set("workflow_group_key", group).
		Set("wait_mode", phpjson.String(string(mode))).
		Set("quorum", nullInt(quorum)).
		Set("result_key", resultKey))}
}

// StartWorkflows adds a step that starts one independent workflow, defined
// by child, per item of the public state list itemsKey, and stores their
// ids under "started_workflow_ids" (start_workflows). Options: Named,
// ResultKey, PayloadKey (default "item"), InheritState (default true),
// GroupKey. child is serialized now, as PHP does.
func (b *Builder) StartWorkflows(itemsKey string, child *Builder, opts ...StartOption) *Builder {
	c := collect(opts)
	return b.start("start_workflows", itemsKey, child, c, "started_workflow_ids", "item", c.nameOr("start_workflows_"+strconv.Itoa(len(b.steps))))
}

// StartAgents is StartWorkflows with the agent defaults (start_agents):
// ids under "agent_workflow_ids", scalar items under "agent_task", step
// name "start_agents".
func (b *Builder) StartAgents(itemsKey string, child *Builder, opts ...StartOption) *Builder {
	c := collect(opts)
	return b.start("start_agents", itemsKey, child, c, DefaultAgentIDsKey, "agent_task", c.nameOr("start_agents"))
}

func (b *Builder) start(method, itemsKey string, child *Builder, c *stepConfig, defResultKey, defPayloadKey, name string) *Builder {
	if !b.ok() {
		return b
	}
	if child == nil {
		return b.failf(method, "%s(%q) needs a child workflow builder", method, itemsKey)
	}
	resultKey, payloadKey := defResultKey, defPayloadKey
	if c.resultKey != nil {
		resultKey = *c.resultKey
	}
	if c.payloadKey != nil {
		payloadKey = *c.payloadKey
	}
	itemsKey, resultKey, payloadKey = phpjson.Trim(itemsKey), phpjson.Trim(resultKey), phpjson.Trim(payloadKey)
	switch {
	case itemsKey == "":
		return b.fail(method, InvalidArgumentException, "Workflow start steps require a non-empty items key.")
	case resultKey == "":
		return b.fail(method, InvalidArgumentException, "Workflow start steps require a non-empty result key.")
	case payloadKey == "":
		return b.fail(method, InvalidArgumentException, "Workflow start steps require a non-empty payload key.")
	}
	group := phpjson.Null()
	if c.groupKey != nil && phpjson.Trim(*c.groupKey) != "" {
		group = phpjson.String(phpjson.Trim(*c.groupKey))
	}
	inherit := true
	if c.inheritState != nil {
		inherit = *c.inheritState
	}
	def, err := child.runtimeDefinitionValue()
	if err != nil {
		b.err = fmt.Errorf("workflow: %s: child workflow %q: %w", method, child.name, err)
		return b
	}
	return b.add(builderStep{typ: StepStartWorkflows, name: name, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepStartWorkflows))).
		Set("name", phpjson.String(name)).
		Set("items_key", phpjson.String(itemsKey)).
		Set("result_key", phpjson.String(resultKey)).
		Set("payload_key", phpjson.String(payloadKey)).
		Set("inherit_state", phpjson.Bool(inherit)).
		Set("group_key", group).
		Set("workflow_definition", def))})
}
