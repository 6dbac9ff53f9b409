package steps

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// forEach is a for_each step (builder: ForEach): its placeholder plans one
// branch job per item in state, each run by the class's item handler;
// the branches settle the step by its mode (all, first_success, quorum),
// with the aggregate and an optional reducer's output.
type forEach struct{}

const (
	msgForEachSettled    = "For-each step already settled."
	msgForEachEarly      = "For-each completion settled early."
	msgForEachImpossible = "For-each completion condition could not be satisfied."
)

func (forEach) Type() workflow.StepType { return workflow.StepForEach }

func (forEach) Placeholder() string { return workflow.HandlerForEach }

// Item reads a branch job's item from its payload (the __for_each
// entry): the class's item handler runs it when the class has one.
func (forEach) Item(payload string) (engine.BranchItem, bool) {
	item, index, ok := forEachBranchMeta(payload)
	if !ok {
		return engine.BranchItem{}, false
	}
	return engine.BranchItem{Item: item, Index: index, Indexed: hasItemIndex(payload)}, true
}

// The __for_each payload of a branch job: {"__for_each": {"item": …,
// "item_index": n}} beside the step's own payload keys. A placeholder's
// payload has none.

// hasItemIndex reports whether a job payload's __for_each entry has an
// item_index: the job is a for_each branch.
func hasItemIndex(payload string) bool {
	v, err := phpjson.DecodeString(payload)
	if err != nil || !phpjson.IsArray(v) {
		return false
	}
	meta := phpjson.Get(phpjson.AsArray(v), "__for_each")
	if !phpjson.IsArray(meta) {
		return false
	}
	_, ok := phpjson.AsArray(meta).Get("item_index")
	return ok
}

// forEachBranchMeta reads a job payload's __for_each entry.
func forEachBranchMeta(payload string) (item phpjson.Value, index int64, ok bool) {
	v, err := phpjson.DecodeString(payload)
	if err != nil || !phpjson.IsArray(v) {
		return phpjson.Null(), 0, false
	}
	meta := phpjson.Get(phpjson.AsArray(v), "__for_each")
	if !phpjson.IsArray(meta) {
		return phpjson.Null(), 0, false
	}
	m := phpjson.AsArray(meta)
	return phpjson.Get(m, "item"), phpjson.ToInt(phpjson.Get(m, "item_index")), true
}

// RunPlaceholder is handle_for_each_step: initialize the runtime
// from the items in state, then dispatch one branch job per item not yet
// settled (or settle at once when none is left). The worker's `completed`
// log of the placeholder is written in the transaction that completes it.
//
// Up to the engine's page size of branch jobs go in with the runtime, in
// one transaction, as the plugin does; a larger fan-out inserts the rest a
// page per transaction after it, its cursor in for_each_plans, so the
// first branches run while the rest are planned and a run cut short (a
// kill, a lost connection) resumes at the cursor: no branch lost, none
// doubled.
func (forEach) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	job := r.Job()
	var plan *forEachPlan
	_, err := r.Transact(ctx, func(a *engine.Advance) error {
		tx := a.Tx()
		logged, p, err := forEachPlaceholder(ctx, a, job)
		plan = p
		if err != nil || !logged {
			return err
		}
		return tx.InsertLogs(r.CompletedLog(r.Elapsed()))
	})
	for err == nil && plan != nil {
		var more bool
		_, err = r.Transact(ctx, func(a *engine.Advance) error {
			var logged bool
			var perr error
			logged, more, perr = plan.page(a)
			if perr != nil || !logged {
				return perr
			}
			return a.Tx().InsertLogs(r.CompletedLog(r.Elapsed()))
		})
		if !more {
			plan = nil
		}
	}
	return err
}

// forEachPlan is the rest of a paged plan after its first transaction:
// the items, those among them that had a result or a failure when the run
// started (done, ascending indexes: they get no branch job) and how to
// build a branch job. Each page re-reads the cursor under its lock, so a
// page retried, or planned by a second run of the same placeholder, never
// inserts an item twice.
//
// The items to plan are not listed: at 1,000,000 items a list of their
// indexes (and the index strings looked up to build it) was 30 MB
// allocated on the way to the first branch, for a set that is nearly
// always every item from the cursor on.
type forEachPlan struct {
	workflowID, jobID int64
	// claimed is the placeholder's row as this run claimed it: a page goes
	// on only while that attempt still holds the job.
	claimed *store.JobRow
	step    int
	total   int64
	done    []int
	size    int
	branch  func(i int) (workflow.StepJob, error)
}

// next returns the page of items at or after cursor that are not done,
// and whether it is the last one.
func (p *forEachPlan) next(cursor int64) (page []int, last bool) {
	d, _ := slices.BinarySearch(p.done, int(cursor))
	for i := int(cursor); i < int(p.total); i++ {
		if d < len(p.done) && p.done[d] == i {
			d++
			continue
		}
		if len(page) == p.size {
			return page, false
		}
		page = append(page, i)
	}
	return page, true
}

// doneIndexes returns the item indexes below total that have a result or
// a failure, ascending: the keys of results and failures that are an
// index as PHP writes it ("7", not "07").
func doneIndexes(total int, entries ...*phpjson.Object) []int {
	var done []int
	for _, e := range entries {
		for k := range e.All() {
			if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < total && strconv.Itoa(i) == k {
				done = append(done, i)
			}
		}
	}
	slices.Sort(done)
	return slices.Compact(done)
}

// insert inserts the branch jobs of page and moves the cursor past it,
// renewing the placeholder's lease (reserved_at): a plan of many pages
// holds the job for minutes, and a stale sweep, ours or PHP's, must not
// hand it back while pages still commit. The last page drops the cursor
// (when there is one: a plan of one page never writes it) and completes
// the job, so it renews nothing.
func (p *forEachPlan) insert(a *engine.Advance, page []int, last, hasCursor bool) error {
	jobs := make([]workflow.StepJob, 0, len(page))
	for _, i := range page {
		j, err := p.branch(i)
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
	}
	if err := a.InsertStepJobsFor(p.workflowID, jobs); err != nil {
		return err
	}
	switch {
	case !last:
		if err := a.Tx().RenewForEachLease(p.jobID); err != nil {
			return err
		}
		return a.Tx().SaveForEachPlan(p.jobID, p.workflowID, p.step, int64(page[len(page)-1]+1), p.total)
	case hasCursor:
		return a.Tx().DeleteForEachPlan(p.jobID)
	}
	return nil
}

// page is one transaction of the plan after the first: the workflow is
// locked without its state (the runtime was written by the first) and
// the plan goes on only while the workflow is live at the step and the
// placeholder still processing. logged: the placeholder completed.
func (p *forEachPlan) page(a *engine.Advance) (logged, more bool, err error) {
	tx := a.Tx()
	status, current, found, err := tx.LockWorkflowPosition(p.workflowID)
	if err != nil || !found {
		return false, false, err
	}
	locked, err := a.LockJob(p.jobID)
	if err != nil || !heldBy(locked, p.claimed) {
		return false, false, err
	}
	if current != p.step || !workflow.IsLive(status) {
		// The step settled (first_success, quorum) or the workflow ended
		// while the plan was under way: nothing more to insert.
		if err := tx.DeleteForEachPlan(p.jobID); err != nil {
			return false, false, err
		}
		return true, false, tx.CompleteJobAny(p.jobID)
	}
	cursor, found, err := tx.LockForEachPlan(p.jobID)
	if err != nil {
		return false, false, err
	}
	if !found {
		// Another run of the placeholder finished the plan.
		return false, false, nil
	}
	page, last := p.next(cursor)
	if err := p.insert(a, page, last, true); err != nil || !last {
		return false, !last, err
	}
	return true, false, tx.CompleteJob(p.jobID)
}

// heldBy reports whether locked, the placeholder's row read under its
// lock, is still held by the attempt that claimed it: processing, with the
// same attempt count (a stale sweep hands the row back and the next claim
// counts one more attempt) and owner, when the claim names one. A run that
// lost its job stops planning; the run that holds it now resumes at the
// cursor.
func heldBy(locked, claimed *store.JobRow) bool {
	if locked == nil || locked.Status != store.StatusProcessing || locked.Attempts != claimed.Attempts {
		return false
	}
	return !claimed.ReservedBy.Valid || locked.ReservedBy == claimed.ReservedBy
}

func forEachPlaceholder(ctx context.Context, a *engine.Advance, job *store.JobRow) (logCompletion bool, plan *forEachPlan, err error) {
	stepIndex := int(job.StepIndex.Int64)
	step, ok, err := a.LockStep(job.WorkflowID.Int64, stepIndex)
	if err != nil || a.Workflow() == nil {
		return false, nil, err
	}
	if !ok || phpjson.ToString(field(step, "type")) != string(workflow.StepForEach) {
		return false, nil, runtimeErrorf("Step %d is not a for_each definition.", stepIndex)
	}
	def, err := forEachDef(step)
	if err != nil {
		return false, nil, err
	}
	locked, err := a.LockJob(job.ID)
	if err != nil {
		return false, nil, err
	}
	if !heldBy(locked, job) {
		return false, nil, nil
	}
	if a.Current() != stepIndex || !workflow.IsLive(a.Workflow().Status) {
		// A plan cut short before the workflow moved on ends here: its
		// cursor goes with it.
		if err := a.Tx().DeleteForEachPlan(job.ID); err != nil {
			return false, nil, err
		}
		return true, nil, a.Tx().CompleteJobAny(a.Job().ID)
	}

	rt, ok := forEachRuntime(a.State(), stepIndex)
	if !ok {
		itemsKey := phpjson.ToString(field(step, "items_key"))
		items := phpjson.List()
		if itemsKey != "" {
			if v, present := a.State().Get(itemsKey); present && !v.IsNull() {
				items = v
			}
		}
		if !phpjson.IsArray(items) {
			return false, nil, runtimeErrorf("For-each step '%s' expected state key '%s' to contain an array.", phpjson.ToString(field(step, "name")), itemsKey)
		}
		values := phpjson.Values(items)
		if err := overItemLimit(a.Engine(), step, len(values)); err != nil {
			return false, nil, err
		}
		if limit := a.State().WorkflowBudget().MaxForEachItems; limit > 0 && int64(len(values)) > limit {
			return false, nil, &workflow.ConstraintViolation{Message: fmt.Sprintf("For-each step '%s' planned %d items, exceeding max_for_each_items budget of %d.",
				phpjson.ToString(field(step, "name")), len(values), limit)}
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

	items := phpjson.Values(phpjson.Get(rt, "items"))
	results, failures := phpjson.AsArray(phpjson.Get(rt, "results")), phpjson.AsArray(phpjson.Get(rt, "failures"))
	// A run after a kill resumes at the cursor its plan left: the items
	// before it have their branch jobs, finished or not.
	cursor, paged, err := a.Tx().LockForEachPlan(job.ID)
	if err != nil {
		return false, nil, err
	}
	plan = &forEachPlan{workflowID: a.Workflow().ID, jobID: job.ID, claimed: job, step: stepIndex, total: int64(len(items)),
		done: doneIndexes(len(items), results, failures), size: a.Engine().ForEachPageSize()}
	page, last := plan.next(cursor)
	setForEachRuntime(a.State(), stepIndex, rt)

	if len(page) == 0 {
		if paged {
			if err := a.Tx().DeleteForEachPlan(job.ID); err != nil {
				return false, nil, err
			}
		}
		switch {
		case forEachSatisfied(def, rt):
			out, err := forEachOutput(ctx, a, step, def, rt, stepIndex)
			if err != nil {
				return false, nil, err
			}
			return true, nil, a.Finalize(ctx, out, false)
		case forEachImpossible(def, rt):
			// PHP leaves the placeholder processing here (it buries every
			// other job of the workflow); we complete it (docs/compat.md).
			if err := a.FailLocked(a.Job().ID, msgForEachImpossible); err != nil {
				return false, nil, err
			}
			return true, nil, a.Tx().CompleteJob(a.Job().ID)
		default:
			if err := a.Tx().CompleteJob(a.Job().ID); err != nil {
				return false, nil, err
			}
			return true, nil, a.PersistState()
		}
	}

	defaults := a.State().DispatchDefaults()
	handler := def.Class
	md := workflow.MetadataFor(a.Metadata(), handler)
	plan.branch = func(i int) (workflow.StepJob, error) {
		meta := phpjson.NewObject()
		meta.Set("item_index", phpjson.Int(int64(i)))
		meta.Set("item", items[i])
		payload := phpjson.NewObject().Set("__for_each", phpjson.ObjectValue(meta))
		opts := workflow.ResolveStepDispatchOptions(step.Object(), handler, defaults, payload, 1, md)
		return workflow.NewStepJob(handler, stepIndex, opts)
	}
	if err := plan.insert(a, page, last, paged); err != nil {
		return false, nil, err
	}
	if err := a.PersistState(); err != nil {
		return false, nil, err
	}
	if !last {
		return false, plan, nil
	}
	return true, nil, a.Tx().CompleteJob(a.Job().ID)
}

// The for_each runtime (_for_each_steps[i]) is kept as a PHP array, so it
// is written back in exactly PHP's shapes: created as {initialized, items,
// results, failures, winner_index}, gaining "settled" on its first
// normalization, results and failures re-sorted by index with a new entry
// appended (spec §3.3, §10.3).

// forEachRuntime returns a copy of an initialized runtime.
func forEachRuntime(s *workflow.State, stepIndex int) (*phpjson.Object, bool) {
	v := phpjson.Index(phpjson.ObjectValue(phpjson.AsArray(stateField(s, workflow.KeyForEachSteps))), strconv.Itoa(stepIndex))
	if !phpjson.IsArray(v) {
		return nil, false
	}
	rt := phpjson.CloneObject(phpjson.AsArray(v))
	if !phpjson.Truthy(phpjson.Get(rt, "initialized")) {
		return nil, false
	}
	return rt, true
}

// setForEachRuntime stores rt as _for_each_steps[stepIndex].
func setForEachRuntime(s *workflow.State, stepIndex int, rt *phpjson.Object) {
	steps := phpjson.CloneObject(phpjson.AsArray(stateField(s, workflow.KeyForEachSteps)))
	steps.Set(strconv.Itoa(stepIndex), phpjson.ObjectValue(rt))
	s.Set(workflow.KeyForEachSteps, phpjson.ObjectValue(steps))
}

// normalizeForEachRuntime is normalize_for_each_runtime, in place.
func normalizeForEachRuntime(rt *phpjson.Object) {
	rt.Set("items", phpjson.List(phpjson.Values(phpjson.Get(rt, "items"))...))
	rt.Set("results", phpjson.ObjectValue(workflow.NormalizeForEachEntries(phpjson.Get(rt, "results"))))
	rt.Set("failures", phpjson.ObjectValue(workflow.NormalizeForEachEntries(phpjson.Get(rt, "failures"))))
	if w := phpjson.Get(rt, "winner_index"); !w.IsNull() {
		rt.Set("winner_index", phpjson.Int(phpjson.ToInt(w)))
	} else {
		rt.Set("winner_index", phpjson.Null())
	}
	rt.Set("settled", phpjson.Bool(phpjson.Truthy(phpjson.Get(rt, "settled"))))
}

func forEachCounts(rt *phpjson.Object) (successes, failures, total int) {
	return phpjson.AsArray(phpjson.Get(rt, "results")).Len(), phpjson.AsArray(phpjson.Get(rt, "failures")).Len(), len(phpjson.Values(phpjson.Get(rt, "items")))
}

// forEachSatisfied is for_each_completion_satisfied.
func forEachSatisfied(def *workflow.ForEachStep, rt *phpjson.Object) bool {
	s, _, total := forEachCounts(rt)
	switch def.Mode {
	case workflow.ForEachFirstSuccess:
		return s >= 1
	case workflow.ForEachQuorum:
		return int64(s) >= max(1, def.Quorum)
	}
	return s >= total
}

// forEachImpossible is for_each_completion_impossible.
func forEachImpossible(def *workflow.ForEachStep, rt *phpjson.Object) bool {
	s, f, total := forEachCounts(rt)
	remaining := max(0, total-s-f)
	switch def.Mode {
	case workflow.ForEachFirstSuccess:
		return remaining == 0 && s == 0
	case workflow.ForEachQuorum:
		return int64(s+remaining) < max(1, def.Quorum)
	}
	return f > 0
}

// sortedEntries returns the entries of results or failures by index.
func sortedEntries(v phpjson.Value) []phpjson.Value {
	vals := slices.Clone(phpjson.Values(v))
	slices.SortStableFunc(vals, func(a, b phpjson.Value) int {
		return cmp.Compare(entryIndex(a), entryIndex(b))
	})
	return vals
}

func entryIndex(v phpjson.Value) int64 {
	if !phpjson.IsArray(v) {
		return 0
	}
	return phpjson.ToInt(phpjson.Get(phpjson.AsArray(v), "index"))
}

// forEachAggregate is build_for_each_aggregate.
func forEachAggregate(step workflow.Step, rt *phpjson.Object) *phpjson.Object {
	results := sortedEntries(phpjson.Get(rt, "results"))
	failures := sortedEntries(phpjson.Get(rt, "failures"))
	winner := phpjson.Null()
	if w := phpjson.Get(rt, "winner_index"); !w.IsNull() {
		for _, r := range results {
			if phpjson.IsArray(r) && entryIndex(r) == phpjson.ToInt(w) {
				winner = r
				break
			}
		}
	}
	mode := field(step, "mode")
	if mode.IsNull() {
		mode = phpjson.String(string(workflow.ForEachAll))
	}
	agg := phpjson.NewObject()
	agg.Set("mode", mode)
	agg.Set("quorum", field(step, "quorum"))
	agg.Set("total", phpjson.Int(int64(len(phpjson.Values(phpjson.Get(rt, "items"))))))
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
func forEachOutput(ctx context.Context, a *engine.Advance, step workflow.Step, def *workflow.ForEachStep, rt *phpjson.Object, index int) (*phpjson.Object, error) {
	state := a.State()
	key := def.AggregateKey(index)
	agg := forEachAggregate(step, rt)
	out := phpjson.NewObject()
	out.Set(key, phpjson.ObjectValue(agg))
	if def.Reducer == nil {
		return out, nil
	}
	reduce, ok := a.LookupReducer(def.Reducer.Class)
	if !ok {
		return nil, runtimeErrorf("For-each reducer class '%s' not found.", def.Reducer.Class)
	}
	rs := workflow.NewState(phpjson.CloneObject(state.Object()))
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

func forEachDef(step workflow.Step) (*workflow.ForEachStep, error) {
	d, err := step.Definition()
	if err != nil {
		return nil, err
	}
	def, ok := d.(*workflow.ForEachStep)
	if !ok {
		return nil, runtimeErrorf("Step is not a for_each definition.")
	}
	return def, nil
}

// CompleteBranch settles one successful branch of a for_each step.
func (forEach) CompleteBranch(ctx context.Context, a *engine.Advance, step workflow.Step, out *phpjson.Object) error {
	item, itemIndex, isBranch := forEachBranchMeta(a.Job().Payload)
	if !isBranch || !hasItemIndex(a.Job().Payload) {
		return runtimeErrorf("Workflow %d: invalid for-each branch payload.", a.Workflow().ID)
	}
	def, err := forEachDef(step)
	if err != nil {
		return err
	}
	stateBefore := a.State().Public()
	out = engine.StripTrace(out)
	rt, ok := forEachRuntime(a.State(), a.Current())
	if !ok {
		return runtimeErrorf("Workflow %d: for-each runtime state missing for step %d.", a.Workflow().ID, a.Current())
	}
	normalizeForEachRuntime(rt)
	if phpjson.Truthy(phpjson.Get(rt, "settled")) {
		return a.Tx().BuryJob(a.Job().ID, msgForEachSettled)
	}
	if v := phpjson.Index(phpjson.Get(rt, "items"), strconv.Itoa(int(itemIndex))); !v.IsNull() {
		item = v
	}
	key := strconv.Itoa(int(itemIndex))
	results := phpjson.CloneObject(phpjson.AsArray(phpjson.Get(rt, "results")))
	failures := phpjson.CloneObject(phpjson.AsArray(phpjson.Get(rt, "failures")))
	entry := phpjson.NewObject()
	entry.Set("index", phpjson.Int(itemIndex))
	entry.Set("item", item)
	entry.Set("output", phpjson.ObjectValue(out))
	entry.Set("job_id", phpjson.Int(a.Job().ID))
	results.Set(key, phpjson.ObjectValue(entry))
	failures.Delete(key)
	rt.Set("results", phpjson.ObjectValue(results))
	rt.Set("failures", phpjson.ObjectValue(failures))
	if phpjson.Get(rt, "winner_index").IsNull() {
		rt.Set("winner_index", phpjson.Int(itemIndex))
	}
	setForEachRuntime(a.State(), a.Current(), rt)

	itemEvent := func() error {
		input, tctx, ok := a.ConsumeTrace()
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
		if phpjson.IsArray(tctx) {
			for k, v := range phpjson.AsArray(tctx).All() {
				c.Set(k, v)
			}
		}
		ev, err := a.NewEvent(workflow.EventStepItemCompleted).
			Input(input).Output(phpjson.ObjectValue(out)).Before(stateBefore).After(a.State().Public()).
			Context(phpjson.ObjectValue(c)).Duration(a.Duration()).Build()
		if err != nil {
			return err
		}
		return a.Tx().InsertEvents(ev)
	}

	if !forEachSatisfied(def, rt) {
		engine.BumpCounter(a.State(), "cost_units", a.Job().CostUnits)
		if err := engine.AssertBudget(a.State()); err != nil {
			return err
		}
		if err := a.PersistState(); err != nil {
			return err
		}
		if err := a.Tx().CompleteJob(a.Job().ID); err != nil {
			return err
		}
		if err := a.Tx().InsertLogs(a.CompletedLog()); err != nil {
			return err
		}
		return itemEvent()
	}

	rt.Set("settled", phpjson.Bool(true))
	setForEachRuntime(a.State(), a.Current(), rt)
	if err := a.PersistState(); err != nil {
		return err
	}
	if err := a.Tx().BuryStepJobs(a.Workflow().ID, a.Current(), msgForEachEarly, a.Job().ID); err != nil {
		return err
	}
	if err := itemEvent(); err != nil {
		return err
	}
	settled, err := forEachOutput(ctx, a, step, def, rt, a.Current())
	if err != nil {
		return err
	}
	return a.Finalize(ctx, settled, true)
}

// FailBranch is handle_for_each_terminal_failure after the burial: the
// branch is recorded in the runtime's failures; the workflow fails (with
// the branch's message) only when the step can no longer complete.
func (forEach) FailBranch(ctx context.Context, a *engine.Advance, step workflow.Step, message string) (bool, error) {
	def, err := forEachDef(step)
	if err != nil {
		return false, err
	}
	rt, ok := forEachRuntime(a.State(), a.Current())
	if v := phpjson.Index(phpjson.ObjectValue(phpjson.AsArray(stateField(a.State(), workflow.KeyForEachSteps))), strconv.Itoa(a.Current())); !phpjson.IsArray(v) {
		rt = phpjson.NewObject()
		rt.Set("initialized", phpjson.Bool(true))
		rt.Set("items", phpjson.List())
		rt.Set("results", phpjson.List())
		rt.Set("failures", phpjson.List())
		rt.Set("winner_index", phpjson.Null())
	} else {
		if !ok { // present but not initialized: PHP normalizes it anyway
			rt = phpjson.CloneObject(phpjson.AsArray(v))
		}
		normalizeForEachRuntime(rt)
	}
	if item, index, isBranch := forEachBranchMeta(a.Job().Payload); isBranch && hasItemIndex(a.Job().Payload) {
		key := strconv.Itoa(int(index))
		failures := phpjson.CloneObject(phpjson.AsArray(phpjson.Get(rt, "failures")))
		results := phpjson.CloneObject(phpjson.AsArray(phpjson.Get(rt, "results")))
		entry := phpjson.NewObject()
		entry.Set("index", phpjson.Int(index))
		entry.Set("item", item)
		entry.Set("error_message", phpjson.String(message))
		entry.Set("job_id", phpjson.Int(a.Job().ID))
		failures.Set(key, phpjson.ObjectValue(entry))
		results.Delete(key)
		rt.Set("failures", phpjson.ObjectValue(failures))
		rt.Set("results", phpjson.ObjectValue(results))
	}
	setForEachRuntime(a.State(), a.Current(), rt)
	if !forEachImpossible(def, rt) {
		return false, a.PersistState()
	}
	return true, a.FailLocked(a.Job().ID, message)
}

// Retry resets the runtime for Engine.Retry: the failures are dropped and
// the step unsettled, so the placeholder re-dispatches only the items
// without a result.
func (forEach) Retry(ctx context.Context, a *engine.Advance, step workflow.Step) error {
	v := phpjson.Index(phpjson.ObjectValue(phpjson.AsArray(stateField(a.State(), workflow.KeyForEachSteps))), strconv.Itoa(a.Current()))
	if phpjson.IsArray(v) {
		rt := phpjson.CloneObject(phpjson.AsArray(v))
		rt.Set("failures", phpjson.List())
		rt.Set("settled", phpjson.Bool(false))
		setForEachRuntime(a.State(), a.Current(), rt)
		if err := a.PersistState(); err != nil {
			return err
		}
	}
	return nil
}

// Admit fails a step over the engine's item limit before its placeholder
// runs (Admission.Fail): the plan, and every branch completion after it,
// rewrite a state holding all the items.
func (forEach) Admit(_ context.Context, p *engine.AdmitParams) engine.Admission {
	if !p.HasStep {
		return engine.Admission{}
	}
	return engine.Admission{Fail: overLimit(p.Engine, p.State, p.Step)}
}

// overLimit is the ConstraintViolation of a step over the engine's item
// limit, or nil.
func overLimit(e *engine.Engine, s *workflow.State, step workflow.Step) error {
	key, ok := field(step, "items_key").AsString()
	if !ok || key == "" {
		return nil
	}
	items := stateField(s, key)
	if e.MaxForEachItems() <= 0 || !phpjson.IsArray(items) {
		return nil // no limit; or the placeholder says what is wrong with the items
	}
	return overItemLimit(e, step, arrayLen(items))
}

// arrayLen is count() of a PHP array without copying it: AsArray would
// turn a list of 1,000,000 items into an object keyed "0" to "999999"
// (half a gigabyte) only to count it.
func arrayLen(v phpjson.Value) int {
	if l, ok := v.AsList(); ok {
		return len(l)
	}
	if o, ok := v.AsObject(); ok {
		return o.Len()
	}
	return 0
}

func overItemLimit(e *engine.Engine, step workflow.Step, n int) error {
	limit := e.MaxForEachItems()
	if limit <= 0 || int64(n) <= limit {
		return nil
	}
	return &workflow.ConstraintViolation{Message: fmt.Sprintf(
		"For-each step '%s' has %d items, over this worker's limit of %d for one for_each step (--max-for-each-items): split the items over several steps or workflows.",
		phpjson.ToString(field(step, "name")), n, limit)}
}

// CheckEnqueue is assert_for_each_budget_for_step, checked before a
// for_each step is enqueued as the next step.
func (forEach) CheckEnqueue(s *workflow.State, step workflow.Step) error {
	limit := s.WorkflowBudget().MaxForEachItems
	if limit <= 0 {
		return nil
	}
	key, ok := field(step, "items_key").AsString()
	if !ok || key == "" {
		return nil
	}
	items := stateField(s, key)
	if !phpjson.IsArray(items) {
		return nil
	}
	n := int64(len(phpjson.Values(items)))
	if n <= limit {
		return nil
	}
	name := key
	if v, present := step.Get("name"); present && !v.IsNull() {
		name = phpjson.ToString(v)
	}
	return &workflow.ConstraintViolation{Message: fmt.Sprintf("For-each step '%s' planned %d items, exceeding max_for_each_items budget of %d.", name, n, limit)}
}
