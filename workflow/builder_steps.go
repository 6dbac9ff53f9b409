package workflow

import (
	"fmt"
	"strconv"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// builderStep is one step as the builder holds it until Build. body
// returns the serialized step without "compensation", keys in the order
// WorkflowBuilder::build_steps() writes them; it is a function because a
// run_workflow step serializes its sub-builder only then, as PHP does.
type builderStep struct {
	typ  StepType
	name string
	body func() (*phpjson.Object, error)
	// compensationAlways: build_steps writes "compensation" (null when
	// unset) for every type except single and parallel, which carry the
	// key only once compensate_with() set it.
	compensationAlways bool
	compensation       *string
}

func (b *Builder) add(step builderStep) *Builder {
	b.steps = append(b.steps, step)
	return b
}

// fixed returns a body that is already known when the step is added.
func fixed(o *phpjson.Object) func() (*phpjson.Object, error) {
	return func() (*phpjson.Object, error) { return o, nil }
}

// nullString is a nullable PHP string.
func nullString(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Null()
	}
	return phpjson.String(*s)
}

// nullInt is a nullable PHP int.
func nullInt(n *int64) phpjson.Value {
	if n == nil {
		return phpjson.Null()
	}
	return phpjson.Int(*n)
}

// unsupported names an option a PHP method has no parameter for and
// whether the caller gave it.
type unsupported struct {
	what  string
	given bool
}

// rejectOptions records an error for options the PHP method has no
// parameter for (they share an option interface with methods that do),
// and for an option that could not be built.
func (b *Builder) rejectOptions(method string, c *stepConfig, opts ...unsupported) bool {
	if !b.ok() {
		return true
	}
	if c.err != nil {
		b.failf(method, "%v", c.err)
		return true
	}
	for _, o := range opts {
		if o.given {
			b.failf(method, "%s() takes no %s option", method, o.what)
			return true
		}
	}
	return false
}

// Then adds a single step running handler (then).
func (b *Builder) Then(handler string, opts ...ThenOption) *Builder {
	if !b.ok() {
		return b
	}
	c := collect(opts)
	name := c.nameOr(strconv.Itoa(len(b.steps)))
	return b.add(builderStep{typ: StepSingle, name: name, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepSingle))).
		Set("name", phpjson.String(name)).
		Set("class", phpjson.String(handler)))})
}

// Parallel adds a step running every handler at once; it settles when all
// completed (parallel).
func (b *Builder) Parallel(handlers ...string) *Builder {
	if !b.ok() {
		return b
	}
	list := make([]phpjson.Value, len(handlers))
	for i, h := range handlers {
		list[i] = phpjson.String(h)
	}
	name := strconv.Itoa(len(b.steps))
	return b.add(builderStep{typ: StepParallel, name: name, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepParallel))).
		Set("name", phpjson.String(name)).
		Set("handlers", phpjson.List(list...)))})
}

// ForEach adds a step that runs handler once per item of the public state
// list itemsKey and stores an aggregate under the result key (for_each).
// Options: Named, ResultKey, a ForEachMode, Quorum, Reducer. Like PHP it
// does not check that a quorum mode has a quorum.
func (b *Builder) ForEach(itemsKey, handler string, opts ...ForEachOption) *Builder {
	if !b.ok() {
		return b
	}
	c := collect(opts)
	if c.err != nil {
		return b.failf("for_each", "%v", c.err)
	}
	mode := ForEachAll
	if c.forEachMode != nil {
		mode = *c.forEachMode
	}
	name := c.nameOr(strconv.Itoa(len(b.steps)))
	return b.add(builderStep{typ: StepForEach, name: name, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepForEach))).
		Set("name", phpjson.String(name)).
		Set("items_key", phpjson.String(itemsKey)).
		Set("class", phpjson.String(handler)).
		Set("result_key", nullString(c.resultKey)).
		Set("mode", phpjson.String(string(mode))).
		Set("quorum", nullInt(c.quorum)).
		Set("reducer_class", nullString(c.reducer)))})
}

// RepeatWhile adds a step that jumps back to the earlier step named target
// while its condition matches (repeat_while). Give either StateKey (with
// Expected, default true) or Condition; MaxIterations caps the loop.
func (b *Builder) RepeatWhile(target string, opts ...RepeatOption) *Builder {
	return b.repeat(RepeatWhile, target, opts)
}

// RepeatUntil adds a step that jumps back to the earlier step named target
// until its condition matches (repeat_until).
func (b *Builder) RepeatUntil(target string, opts ...RepeatOption) *Builder {
	return b.repeat(RepeatUntil, target, opts)
}

func (b *Builder) repeat(mode RepeatMode, target string, opts []RepeatOption) *Builder {
	method := "repeat_" + string(mode)
	if !b.ok() {
		return b
	}
	c := collect(opts)
	if c.err != nil {
		return b.failf(method, "%v", c.err)
	}
	target = phpjson.Trim(target)
	var stateKey, condition *string
	if c.stateKey != nil {
		k := phpjson.Trim(*c.stateKey)
		stateKey = &k
	}
	if c.condition != nil {
		k := phpjson.Trim(*c.condition)
		condition = &k
	}
	switch {
	case target == "":
		return b.fail(method, RuntimeException, "Repeat steps require a non-empty target step name.")
	case stateKey != nil && *stateKey == "":
		return b.fail(method, RuntimeException, "Repeat steps require a non-empty state key.")
	case condition != nil && *condition == "":
		return b.fail(method, RuntimeException, "Repeat steps require a non-empty condition class.")
	case stateKey == nil && condition == nil:
		return b.fail(method, RuntimeException, "Repeat steps require either a state key or a condition class.")
	case stateKey != nil && condition != nil:
		return b.fail(method, RuntimeException, "Repeat steps cannot define both a state key and a condition class.")
	case c.maxIterations != nil && *c.maxIterations < 1:
		return b.fail(method, RuntimeException, "Repeat steps require max_iterations to be at least 1.")
	case !b.hasPriorStepNamed(target):
		return b.fail(method, RuntimeException, fmt.Sprintf("Repeat target '%s' must reference an earlier named step.", target))
	}
	expected := phpjson.Bool(true)
	if c.expected != nil {
		expected = *c.expected
	}
	name := c.nameOr("repeat_" + string(mode) + "_" + strconv.Itoa(len(b.steps)))
	return b.add(builderStep{typ: StepRepeat, name: name, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepRepeat))).
		Set("name", phpjson.String(name)).
		Set("repeat_mode", phpjson.String(string(mode))).
		Set("target_step", phpjson.String(target)).
		Set("state_key", nullString(stateKey)).
		Set("expected", expected).
		Set("condition_class", nullString(condition)).
		Set("max_iterations", nullInt(c.maxIterations)))})
}

func (b *Builder) hasPriorStepNamed(name string) bool {
	for _, s := range b.steps {
		if s.name == name {
			return true
		}
	}
	return false
}

// RunWorkflow adds a step that runs sub as a nested child workflow named
// name and continues when it completes (run_workflow). Only sub's steps,
// queue, priority and max attempts are kept, and they are read at Build
// time, as PHP reads the sub-builder at dispatch.
func (b *Builder) RunWorkflow(name string, sub *Builder) *Builder {
	if !b.ok() {
		return b
	}
	if sub == nil {
		return b.failf("run_workflow", "run_workflow(%q) needs a sub-workflow builder", name)
	}
	stepName := strconv.Itoa(len(b.steps))
	return b.add(builderStep{typ: StepRunWorkflow, name: stepName, compensationAlways: true, body: func() (*phpjson.Object, error) {
		if sub.err != nil {
			return nil, sub.err
		}
		steps, err := sub.buildSteps()
		if err != nil {
			return nil, err
		}
		return phpjson.NewObject().
			Set("type", phpjson.String(string(StepRunWorkflow))).
			Set("name", phpjson.String(stepName)).
			Set("workflow_name", phpjson.String(name)).
			Set("workflow_steps", phpjson.List(steps...)).
			Set("workflow_queue", phpjson.String(sub.queue)).
			Set("workflow_priority", phpjson.Int(int64(sub.priority))).
			Set("workflow_max_attempts", phpjson.Int(sub.maxAttempts)), nil
	}})
}

// Delay adds a durable pause (delay): a placeholder job available after d,
// which Queuety counts in whole seconds.
func (b *Builder) Delay(d time.Duration) *Builder {
	if !b.ok() {
		return b
	}
	seconds, ok := wholeSeconds(d)
	if !ok {
		return b.failf("delay", "delay %s is not a whole number of seconds", d)
	}
	delays := 0
	for _, s := range b.steps {
		if s.typ == StepDelay {
			delays++
		}
	}
	name := "delay_" + strconv.Itoa(delays)
	return b.add(builderStep{typ: StepDelay, name: name, compensationAlways: true, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepDelay))).
		Set("name", phpjson.String(name)).
		Set("delay_seconds", phpjson.Int(seconds)))})
}

// CompensateWith attaches a compensation handler to the most recent step
// (compensate_with); it runs, in reverse step order, on cancel (and on
// failure with CompensateOnFailure).
func (b *Builder) CompensateWith(handler string) *Builder {
	if !b.ok() {
		return b
	}
	if len(b.steps) == 0 {
		return b.fail("compensate_with", RuntimeException, "Cannot attach compensation before adding a step.")
	}
	b.steps[len(b.steps)-1].compensation = &handler
	return b
}
