package workflow

import (
	"cmp"
	"slices"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Accessors for the reserved keys the runtime appends while a workflow
// runs. They only read; the advance transaction (not written yet) owns the
// writes, which must reproduce PHP's shapes (see the spec, §3-§6).

// Wait is the wait context of a parked workflow (_wait), or the one
// synthesized from the legacy _waiting_for_signal.
type Wait struct {
	// Type is "signal" or "workflow" ("wait_for_signal" for the legacy key).
	Type      string
	StepIndex int64
	Mode      WaitMode
	// ResultKey is "" when null.
	ResultKey string
	// WaitingFor are signal names or workflow ids (as decimal strings).
	WaitingFor []string
	StepName   string
	// Optional details, present only when the step has them.
	GroupKey       string
	Quorum         int64
	HumanWait      HumanWait
	MatchPayload   *phpjson.Object
	CorrelationKey string
	// Raw is the stored object (nil for the legacy form).
	Raw *phpjson.Object
}

// Wait returns the current wait context (Workflow::wait_context_from_state):
// an _wait array with a type, else a non-empty legacy _waiting_for_signal.
func (s *State) Wait() (Wait, bool) {
	if v := s.field(KeyWait); phpjson.IsArray(v) {
		o := phpjson.AsArray(v)
		if t := phpjson.Get(o, "type"); !t.IsNull() {
			w := Wait{
				Type:           phpjson.ToString(t),
				StepIndex:      phpjson.ToInt(phpjson.Get(o, "step_index")),
				Mode:           WaitMode(phpjson.ToString(phpjson.Get(o, "wait_mode"))),
				ResultKey:      phpjson.ToString(phpjson.Get(o, "result_key")),
				StepName:       phpjson.ToString(phpjson.Get(o, "step_name")),
				GroupKey:       phpjson.ToString(phpjson.Get(o, "group_key")),
				Quorum:         phpjson.ToInt(phpjson.Get(o, "quorum")),
				HumanWait:      HumanWait(phpjson.ToString(phpjson.Get(o, "human_wait"))),
				CorrelationKey: phpjson.ToString(phpjson.Get(o, "correlation_key")),
				Raw:            o,
			}
			if m := phpjson.Get(o, "match_payload"); phpjson.IsArray(m) {
				w.MatchPayload = phpjson.AsArray(m)
			}
			for _, e := range phpjson.Values(phpjson.Get(o, "waiting_for")) {
				w.WaitingFor = append(w.WaitingFor, phpjson.ToString(e))
			}
			return w, true
		}
	}
	if name, ok := s.field(KeyWaitingForSignal).AsString(); ok && name != "" {
		return Wait{Type: "wait_for_signal", Mode: WaitAll, WaitingFor: []string{name}}, true
	}
	return Wait{}, false
}

// ForEachRuntime is the progress of one for_each step (_for_each_steps[i]),
// normalized as the runtime loads it.
type ForEachRuntime struct {
	Initialized bool
	Items       []phpjson.Value
	// Results and Failures are ordered by item index (the stored order is
	// not completion order; see the spec §10.3).
	Results  []ForEachEntry
	Failures []ForEachEntry
	// WinnerIndex is the first successful item, if any.
	WinnerIndex    int64
	HasWinnerIndex bool
	Settled        bool
}

// ForEachEntry is one branch outcome: a result (Output set) or a failure
// (ErrorMessage set).
type ForEachEntry struct {
	Index        int64
	Item         phpjson.Value
	Output       phpjson.Value
	ErrorMessage string
	JobID        int64
}

// ForEachRuntime returns the runtime of the for_each step at stepIndex.
// The map is int-keyed in PHP, so it is stored as a list when it holds
// step 0 only, and as an object otherwise.
func (s *State) ForEachRuntime(stepIndex int) (ForEachRuntime, bool) {
	v := phpjson.Index(phpjson.ObjectValue(phpjson.AsArray(s.field(KeyForEachSteps))), itoa(stepIndex))
	if !phpjson.IsArray(v) {
		return ForEachRuntime{}, false
	}
	o := phpjson.AsArray(v)
	rt := ForEachRuntime{
		Initialized: phpjson.Truthy(phpjson.Get(o, "initialized")),
		Items:       phpjson.Values(phpjson.Get(o, "items")),
		Results:     forEachEntries(phpjson.Get(o, "results")),
		Failures:    forEachEntries(phpjson.Get(o, "failures")),
		Settled:     phpjson.Truthy(phpjson.Get(o, "settled")),
	}
	if w := phpjson.Get(o, "winner_index"); !w.IsNull() {
		rt.WinnerIndex, rt.HasWinnerIndex = phpjson.ToInt(w), true
	}
	return rt, true
}

// forEachEntries reads results or failures as the runtime loads them
// (normalizeForEachEntries), sorted by index.
func forEachEntries(v phpjson.Value) []ForEachEntry {
	norm := normalizeForEachEntries(v)
	out := make([]ForEachEntry, 0, norm.Len())
	for k, e := range norm.All() {
		o := phpjson.AsArray(e)
		out = append(out, ForEachEntry{
			Index:        phpjson.StringToInt(k),
			Item:         phpjson.Get(o, "item"),
			Output:       phpjson.Get(o, "output"),
			ErrorMessage: phpjson.ToString(phpjson.Get(o, "error_message")),
			JobID:        phpjson.ToInt(phpjson.Get(o, "job_id")),
		})
	}
	return out
}

// NormalizeForEachEntries is normalize_for_each_entries (below).
func NormalizeForEachEntries(v phpjson.Value) *phpjson.Object { return normalizeForEachEntries(v) }

// normalizeForEachEntries is normalize_for_each_entries, the one reading of
// a for_each runtime's results and failures: entries keyed by their
// "index" (else their array key), later duplicates winning, sorted by
// index.
func normalizeForEachEntries(v phpjson.Value) *phpjson.Object {
	type entry struct {
		index int64
		v     phpjson.Value
	}
	var list []entry
	pos := map[int64]int{}
	for k, e := range phpjson.AsArray(v).All() {
		if !phpjson.IsArray(e) {
			continue
		}
		index := phpjson.StringToInt(k)
		if iv, ok := phpjson.AsArray(e).Get("index"); ok {
			index = phpjson.ToInt(iv)
		}
		if i, dup := pos[index]; dup {
			list[i].v = e
			continue
		}
		pos[index] = len(list)
		list = append(list, entry{index, e})
	}
	slices.SortStableFunc(list, func(a, b entry) int { return cmp.Compare(a.index, b.index) })
	out := phpjson.NewObject()
	for _, e := range list {
		out.Set(itoa(int(e.index)), e.v)
	}
	return out
}

// RepeatIterations returns how many times the repeat step at stepIndex has
// jumped back (_repeat_steps; never reset during a run).
func (s *State) RepeatIterations(stepIndex int) int64 {
	entry := phpjson.Index(phpjson.ObjectValue(phpjson.AsArray(s.field(KeyRepeatSteps))), itoa(stepIndex))
	if !phpjson.IsArray(entry) {
		return 0
	}
	return max(0, phpjson.ToInt(phpjson.Get(phpjson.AsArray(entry), "iterations")))
}

// WorkflowGroup is one group of workflows a start_workflows step started.
type WorkflowGroup struct {
	Key string
	IDs []int64
}

// WorkflowGroups returns the started groups in stored order.
func (s *State) WorkflowGroups() []WorkflowGroup {
	var groups []WorkflowGroup
	for k, v := range phpjson.AsArray(s.field(KeyWorkflowGroups)).All() {
		groups = append(groups, WorkflowGroup{Key: k, IDs: normalizeWorkflowIDs(v)})
	}
	return groups
}

// CompensationEntry is one settled step waiting to be compensated.
type CompensationEntry struct {
	StepIndex int64
	Handler   string
	// Payload and State (the public state right after the step settled)
	// are never nil.
	Payload *phpjson.Object
	State   *phpjson.Object
}

// CompensationStack returns the stack in push order; it runs in reverse.
func (s *State) CompensationStack() []CompensationEntry {
	var out []CompensationEntry
	for _, e := range phpjson.Values(s.field(KeyCompensationStack)) {
		if !phpjson.IsArray(e) {
			continue
		}
		o := phpjson.AsArray(e)
		handler, _ := phpjson.Get(o, "handler").AsString()
		out = append(out, CompensationEntry{
			StepIndex: phpjson.ToInt(phpjson.Get(o, "step_index")),
			Handler:   handler,
			Payload:   phpjson.AsArray(phpjson.Get(o, "payload")),
			State:     phpjson.AsArray(phpjson.Get(o, "state")),
		})
	}
	return out
}

// Compensated reports whether compensations already ran (retry() is then
// refused) and why: "cancel", "failure" or "deadline".
func (s *State) Compensated() (cause string, ok bool) {
	if !phpjson.Truthy(s.field(KeyCompensated)) {
		return "", false
	}
	return phpjson.ToString(s.field(KeyCompensationCause)), true
}
