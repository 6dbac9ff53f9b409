package workflow

import (
	"github.com/queuety-go/queuety/internal/phpjson"
)

// Step options stand in for the named and defaulted parameters of
// Queuety's builder methods. Each method accepts only the options its PHP
// counterpart has parameters for, checked at compile time: an option
// satisfies the option interfaces of the methods it applies to (the
// pattern OpenTelemetry's Go API uses).

// ThenOption configures Then.
type ThenOption interface {
	apply(*stepConfig)
	thenOption()
}

// ForEachOption configures ForEach.
type ForEachOption interface {
	apply(*stepConfig)
	forEachOption()
}

// RepeatOption configures RepeatWhile and RepeatUntil.
type RepeatOption interface {
	apply(*stepConfig)
	repeatOption()
}

// SignalOption configures WaitForSignal, WaitForSignals, WaitForApproval,
// WaitForDecision and WaitForInput.
type SignalOption interface {
	apply(*stepConfig)
	signalOption()
}

// WorkflowWaitOption configures WaitForWorkflow(s), WaitForWorkflowGroup,
// WaitForAgents and WaitForAgentGroup.
type WorkflowWaitOption interface {
	apply(*stepConfig)
	workflowWaitOption()
}

// StartOption configures StartWorkflows and StartAgents.
type StartOption interface {
	apply(*stepConfig)
	startOption()
}

// NamedOption applies to every step method that takes a name.
type NamedOption interface {
	ThenOption
	ForEachOption
	RepeatOption
	SignalOption
	WorkflowWaitOption
	StartOption
}

// ResultKeyOption applies to every step method that takes a result key.
type ResultKeyOption interface {
	ForEachOption
	SignalOption
	WorkflowWaitOption
	StartOption
}

// WaitOption applies to signal and workflow waits.
type WaitOption interface {
	SignalOption
	WorkflowWaitOption
}

// QuorumOption applies to for_each and workflow waits.
type QuorumOption interface {
	ForEachOption
	WorkflowWaitOption
}

// stepConfig collects the options of one step call. Pointers tell "not
// given" (the PHP default applies) from a given value.
type stepConfig struct {
	name           *string
	resultKey      *string
	noResultKey    bool
	forEachMode    *ForEachMode
	waitMode       *WaitMode
	quorum         *int64
	reducer        *string
	stateKey       *string
	expected       *phpjson.Value
	condition      *string
	maxIterations  *int64
	matchPayload   *phpjson.Object
	correlationKey *string
	signal         *string
	decision       *[2]string
	payloadKey     *string
	inheritState   *bool
	groupKey       *string
	err            error
}

// option is the one implementation behind every option constructor; the
// interface each constructor returns decides where it may be passed.
type option func(*stepConfig)

func (o option) apply(c *stepConfig) { o(c) }
func (option) thenOption()           {}
func (option) forEachOption()        {}
func (option) repeatOption()         {}
func (option) signalOption()         {}
func (option) workflowWaitOption()   {}
func (option) startOption()          {}

// Named sets the step's name (PHP's $name / $step_name), which _next_step
// and repeat targets refer to. Without it the builder's default applies.
func Named(name string) NamedOption {
	return option(func(c *stepConfig) { c.name = &name })
}

// ResultKey sets the state key the step stores its result under.
func ResultKey(key string) ResultKeyOption {
	return option(func(c *stepConfig) { c.resultKey, c.noResultKey = &key, false })
}

// WithoutResultKey stores null as the result key, for the waits whose PHP
// default is a key (approval, decision, input, agents): the result is then
// merged into the top-level state.
func WithoutResultKey() WaitOption {
	return option(func(c *stepConfig) { c.resultKey, c.noResultKey = nil, true })
}

// Quorum sets how many successes (for_each) or completed dependencies
// (workflow waits) a quorum mode needs.
func Quorum(n int64) QuorumOption {
	return option(func(c *stepConfig) { c.quorum = &n })
}

// Reducer sets the for_each reducer class (ForEachReducer).
func Reducer(handler string) ForEachOption {
	return option(func(c *stepConfig) { c.reducer = &handler })
}

// StateKey makes a repeat step compare the public state key with the
// expected value (true unless Expected says otherwise).
func StateKey(key string) RepeatOption {
	return option(func(c *stepConfig) { c.stateKey = &key })
}

// Expected sets the value a repeat step's state key is compared with. It
// is stored as JSON: a phpjson.Value, or any value phpjson.FromGo accepts.
func Expected(v any) RepeatOption {
	return option(func(c *stepConfig) {
		val, err := phpjson.FromGo(v)
		if err != nil {
			c.err = err
			return
		}
		c.expected = &val
	})
}

// Condition makes a repeat step ask a RepeatCondition class instead of
// comparing a state key.
func Condition(handler string) RepeatOption {
	return option(func(c *stepConfig) { c.condition = &handler })
}

// MaxIterations caps how many times a repeat step may jump back; the
// workflow fails past it.
func MaxIterations(n int64) RepeatOption {
	return option(func(c *stepConfig) { c.maxIterations = &n })
}

// MatchPayload makes a signal count only when its payload contains this
// subset (compared recursively, leaves by canonical JSON).
func MatchPayload(subset *phpjson.Object) SignalOption {
	return option(func(c *stepConfig) { c.matchPayload = subset })
}

// CorrelationKey makes a signal count only when its payload and the
// workflow state hold the same value under this key.
func CorrelationKey(key string) SignalOption {
	return option(func(c *stepConfig) { c.correlationKey = &key })
}

// Signal sets the signal name of WaitForApproval (default "approval") or
// WaitForInput (default "input").
func Signal(name string) SignalOption {
	return option(func(c *stepConfig) { c.signal = &name })
}

// DecisionSignals sets the two signals of WaitForDecision (default
// "approved" and "rejected").
func DecisionSignals(approve, reject string) SignalOption {
	return option(func(c *stepConfig) { c.decision = &[2]string{approve, reject} })
}

// PayloadKey sets the child state key a scalar item is stored under
// (default "item", or "agent_task" for StartAgents).
func PayloadKey(key string) StartOption {
	return option(func(c *stepConfig) { c.payloadKey = &key })
}

// InheritState sets whether each child starts from the parent's public
// state (default true).
func InheritState(inherit bool) StartOption {
	return option(func(c *stepConfig) { c.inheritState = &inherit })
}

// GroupKey records the started ids under a group that
// WaitForWorkflowGroup / WaitForAgentGroup can wait on later.
func GroupKey(key string) StartOption {
	return option(func(c *stepConfig) { c.groupKey = &key })
}

// The modes are options themselves: b.ForEach("items", "ItemStep",
// workflow.ForEachQuorum, workflow.Quorum(2)).

func (m ForEachMode) apply(c *stepConfig) { c.forEachMode = &m }
func (ForEachMode) forEachOption()        {}

func (m WaitMode) apply(c *stepConfig) { c.waitMode = &m }
func (WaitMode) signalOption()         {}
func (WaitMode) workflowWaitOption()   {}

// collect applies opts in order.
func collect[O interface{ apply(*stepConfig) }](opts []O) *stepConfig {
	c := &stepConfig{}
	for _, o := range opts {
		if any(o) != nil {
			o.apply(c)
		}
	}
	return c
}

// nameOr returns the configured name or def.
func (c *stepConfig) nameOr(def string) string {
	if c.name != nil {
		return *c.name
	}
	return def
}

// resultKeyOr returns the configured result key, or def when none was
// given; null when WithoutResultKey was.
func (c *stepConfig) resultKeyOr(def phpjson.Value) phpjson.Value {
	switch {
	case c.noResultKey:
		return phpjson.Null()
	case c.resultKey != nil:
		return phpjson.String(*c.resultKey)
	}
	return def
}
