package workflow

import (
	"cmp"
	"context"
	"slices"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// The for_each runtime (_for_each_steps[i]) is kept as a PHP array, so it
// is written back in exactly PHP's shapes: created as {initialized, items,
// results, failures, winner_index}, gaining "settled" on its first
// normalization, results and failures re-sorted by index with a new entry
// appended (spec §3.3, §10.3).

// forEachRuntime returns a copy of an initialized runtime.
func (s *State) forEachRuntime(stepIndex int) (*phpjson.Object, bool) {
	v := phpIndex(phpjson.ObjectValue(phpArray(s.field(KeyForEachSteps))), itoa(stepIndex))
	if !isArray(v) {
		return nil, false
	}
	rt := cloneObject(phpArray(v))
	if !truthy(get(rt, "initialized")) {
		return nil, false
	}
	return rt, true
}

// setForEachRuntime stores rt as _for_each_steps[stepIndex].
func (s *State) setForEachRuntime(stepIndex int, rt *phpjson.Object) {
	steps := cloneObject(phpArray(s.field(KeyForEachSteps)))
	steps.Set(itoa(stepIndex), phpjson.ObjectValue(rt))
	s.Set(KeyForEachSteps, phpjson.ObjectValue(steps))
}

// normalizeForEachRuntime is normalize_for_each_runtime, in place.
func normalizeForEachRuntime(rt *phpjson.Object) {
	rt.Set("items", phpjson.List(phpValues(get(rt, "items"))...))
	rt.Set("results", phpjson.ObjectValue(normalizeForEachEntries(get(rt, "results"))))
	rt.Set("failures", phpjson.ObjectValue(normalizeForEachEntries(get(rt, "failures"))))
	if w := get(rt, "winner_index"); !w.IsNull() {
		rt.Set("winner_index", phpjson.Int(toInt(w)))
	} else {
		rt.Set("winner_index", phpjson.Null())
	}
	rt.Set("settled", phpjson.Bool(truthy(get(rt, "settled"))))
}

func forEachCounts(rt *phpjson.Object) (successes, failures, total int) {
	return phpArray(get(rt, "results")).Len(), phpArray(get(rt, "failures")).Len(), len(phpValues(get(rt, "items")))
}

// forEachSatisfied is for_each_completion_satisfied.
func forEachSatisfied(def *ForEachStep, rt *phpjson.Object) bool {
	s, _, total := forEachCounts(rt)
	switch def.Mode {
	case ForEachFirstSuccess:
		return s >= 1
	case ForEachQuorum:
		return int64(s) >= max(1, def.Quorum)
	}
	return s >= total
}

// forEachImpossible is for_each_completion_impossible.
func forEachImpossible(def *ForEachStep, rt *phpjson.Object) bool {
	s, f, total := forEachCounts(rt)
	remaining := max(0, total-s-f)
	switch def.Mode {
	case ForEachFirstSuccess:
		return remaining == 0 && s == 0
	case ForEachQuorum:
		return int64(s+remaining) < max(1, def.Quorum)
	}
	return f > 0
}

// sortedEntries returns the entries of results or failures by index.
func sortedEntries(v phpjson.Value) []phpjson.Value {
	vals := slices.Clone(phpValues(v))
	slices.SortStableFunc(vals, func(a, b phpjson.Value) int {
		return cmp.Compare(entryIndex(a), entryIndex(b))
	})
	return vals
}

func entryIndex(v phpjson.Value) int64 {
	if !isArray(v) {
		return 0
	}
	return toInt(get(phpArray(v), "index"))
}

// forEachAggregate is build_for_each_aggregate.
func forEachAggregate(step Step, rt *phpjson.Object) *phpjson.Object {
	results := sortedEntries(get(rt, "results"))
	failures := sortedEntries(get(rt, "failures"))
	winner := phpjson.Null()
	if w := get(rt, "winner_index"); !w.IsNull() {
		for _, r := range results {
			if isArray(r) && entryIndex(r) == toInt(w) {
				winner = r
				break
			}
		}
	}
	mode := step.field("mode")
	if mode.IsNull() {
		mode = phpjson.String(string(ForEachAll))
	}
	agg := phpjson.NewObject()
	agg.Set("mode", mode)
	agg.Set("quorum", step.field("quorum"))
	agg.Set("total", phpjson.Int(int64(len(phpValues(get(rt, "items"))))))
	agg.Set("succeeded", phpjson.Int(int64(len(results))))
	agg.Set("failed", phpjson.Int(int64(len(failures))))
	agg.Set("settled", phpjson.Bool(true))
	agg.Set("winner", winner)
	agg.Set("results", phpjson.List(results...))
	agg.Set("failures", phpjson.List(failures...))
	return agg
}

// forEachOutput is for_each_step_output: {result_key: aggregate} with the
// reducer's output merged over it.
func (e *Engine) forEachOutput(ctx context.Context, state *State, step Step, def *ForEachStep, rt *phpjson.Object, index int) (*phpjson.Object, error) {
	key := def.AggregateKey(index)
	agg := forEachAggregate(step, rt)
	out := phpjson.NewObject()
	out.Set(key, phpjson.ObjectValue(agg))
	if def.Reducer == nil {
		return out, nil
	}
	reduce, ok := e.lookupReducer(def.Reducer.Class)
	if !ok {
		return nil, runtimeErrorf("For-each reducer class '%s' not found.", def.Reducer.Class)
	}
	rs := NewState(cloneObject(state.Object()))
	rs.Set(key, phpjson.ObjectValue(agg))
	extra, err := reduce(ctx, rs.Public(), agg, def.Reducer.Payload)
	if err != nil {
		return nil, err
	}
	for k, v := range extra.All() {
		out.Set(k, v)
	}
	return out, nil
}

func forEachDef(step Step) (*ForEachStep, error) {
	d, err := step.Definition()
	if err != nil {
		return nil, err
	}
	def, ok := d.(*ForEachStep)
	if !ok {
		return nil, runtimeErrorf("Step is not a for_each definition.")
	}
	return def, nil
}

// forEachBranch settles one successful branch of a for_each step.
func (a *advanceTx) forEachBranch(step Step, out *phpjson.Object) error {
	item, itemIndex, isBranch := forEachBranchMeta(a.job.Payload)
	if !isBranch || !hasItemIndex(a.job.Payload) {
		return runtimeErrorf("Workflow %d: invalid for-each branch payload.", a.wf.ID)
	}
	def, err := forEachDef(step)
	if err != nil {
		return err
	}
	stateBefore := a.state.Public()
	out = stripTrace(out)
	rt, ok := a.state.forEachRuntime(a.current)
	if !ok {
		return runtimeErrorf("Workflow %d: for-each runtime state missing for step %d.", a.wf.ID, a.current)
	}
	normalizeForEachRuntime(rt)
	if truthy(get(rt, "settled")) {
		return a.tx.BuryJob(a.job.ID, msgForEachSettled)
	}
	if v := phpIndex(get(rt, "items"), itoa(int(itemIndex))); !v.IsNull() {
		item = v
	}
	key := itoa(int(itemIndex))
	results := cloneObject(phpArray(get(rt, "results")))
	failures := cloneObject(phpArray(get(rt, "failures")))
	entry := phpjson.NewObject()
	entry.Set("index", phpjson.Int(itemIndex))
	entry.Set("item", item)
	entry.Set("output", phpjson.ObjectValue(out))
	entry.Set("job_id", phpjson.Int(a.job.ID))
	results.Set(key, phpjson.ObjectValue(entry))
	failures.Delete(key)
	rt.Set("results", phpjson.ObjectValue(results))
	rt.Set("failures", phpjson.ObjectValue(failures))
	if get(rt, "winner_index").IsNull() {
		rt.Set("winner_index", phpjson.Int(itemIndex))
	}
	a.state.setForEachRuntime(a.current, rt)

	itemEvent := func() error {
		input, tctx, ok := a.trace.consume()
		if !ok || input.IsNull() {
			in := phpjson.NewObject()
			in.Set("state", phpjson.ObjectValue(stateBefore))
			in.Set("item", item)
			in.Set("item_index", phpjson.Int(itemIndex))
			input = phpjson.ObjectValue(in)
		}
		c := phpjson.NewObject()
		c.Set("item_index", phpjson.Int(itemIndex))
		c.Set("item", item)
		if isArray(tctx) {
			for k, v := range phpArray(tctx).All() {
				c.Set(k, v)
			}
		}
		ev, err := newEvent(a.wf.ID, a.job, a.current, a.trace, a.job.Handler, EventStepItemCompleted).
			input(input).output(phpjson.ObjectValue(out)).before(stateBefore).after(a.state.Public()).
			context(phpjson.ObjectValue(c)).duration(a.dur).build()
		if err != nil {
			return err
		}
		return a.tx.InsertEvents(ev)
	}

	if !forEachSatisfied(def, rt) {
		a.state.bumpCounter("cost_units", a.job.CostUnits)
		if err := a.state.assertBudget(); err != nil {
			return err
		}
		if err := a.persistState(); err != nil {
			return err
		}
		if err := a.tx.CompleteJob(a.job.ID); err != nil {
			return err
		}
		if err := a.tx.InsertLogs(a.e.completedLog(a.job, a.wf.ID, a.current, a.dur)); err != nil {
			return err
		}
		return itemEvent()
	}

	rt.Set("settled", phpjson.Bool(true))
	a.state.setForEachRuntime(a.current, rt)
	if err := a.persistState(); err != nil {
		return err
	}
	if err := a.tx.BuryStepJobs(a.wf.ID, a.current, msgForEachEarly, a.job.ID); err != nil {
		return err
	}
	if err := itemEvent(); err != nil {
		return err
	}
	settled, err := a.e.forEachOutput(a.ctx, a.state, step, def, rt, a.current)
	if err != nil {
		return err
	}
	return a.finalize(settled, true)
}

func hasItemIndex(payload string) bool {
	v, err := phpjson.DecodeString(payload)
	if err != nil || !isArray(v) {
		return false
	}
	meta := get(phpArray(v), "__for_each")
	if !isArray(meta) {
		return false
	}
	_, ok := phpArray(meta).Get("item_index")
	return ok
}

func (a *advanceTx) persistState() error {
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	return a.tx.SetState(a.wf.ID, b)
}
