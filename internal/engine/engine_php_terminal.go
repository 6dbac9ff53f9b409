package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// A workflow's terminal handling (cancel, deadline, failure) may call PHP
// classes: compensations, on_cancel, on_deadline. With the PHP pool as the
// engine's CallableRunner they run there; without it this engine cannot
// run them, and must not pretend it did (write _compensated: true, which
// stops PHP from ever running them). So, without a runner:
//   - Cancel refuses with a NeedsPHPError and changes nothing;
//   - the deadline check leaves such workflows to PHP workers'
//     check_deadlines (a debug log row says so, once per process);
//   - the stale sweep leaves such workflows' dead steps with no attempts
//     left to PHP workers' recover_stale;
//   - a failure this engine must record (its own step buried) runs the Go
//     compensations, logs the PHP ones it could not run and does not mark
//     the workflow compensated;
//   - a repeat step whose condition is a PHP class is not run: Run returns
//     a NeedsPHPError with nothing written, and the worker gives the job
//     back for PHP workers to take.

// phpOnly lists the classes the terminal handling for reason ("cancel",
// "deadline", "failure") would call that have no Go implementation, when
// there is no CallableRunner to run them; nil otherwise.
func (e *Engine) phpOnly(state *workflow.State, reason string) []string {
	if e.callables() != nil || state == nil {
		return nil
	}
	var out []string
	add := func(class string) {
		if class == "" || slices.Contains(out, class) {
			return
		}
		if _, ok := e.handlers.LookupCompensation(class); !ok {
			out = append(out, class)
		}
	}
	_, compensated := state.Compensated()
	if !compensated && (reason == "cancel" || state.CompensateOnFailure()) {
		for _, entry := range state.CompensationStack() {
			add(entry.Handler)
		}
	}
	switch reason {
	case "cancel":
		if ref, ok := state.OnCancel(); ok {
			add(ref.Class)
		}
	case "deadline":
		if ref, ok := state.OnDeadline(); ok {
			add(ref.Class)
		}
	}
	return out
}

// leftToPHPLog is the debug row saying which PHP classes of a workflow's
// terminal handling this process left undone or to PHP workers.
func leftToPHPLog(workflowID int64, reason string, classes []string) (store.LogRow, error) {
	l := store.WorkflowLog(workflowID, classes[0], "default", store.LogDebug)
	l.ErrorMessage = store.String(fmt.Sprintf("Left to PHP workers: the %s handling of workflow %d calls PHP classes this process cannot run (%s).",
		reason, workflowID, strings.Join(classes, ", ")))
	list := make([]phpjson.Value, len(classes))
	for i, c := range classes {
		list[i] = phpjson.String(c)
	}
	b, err := encodeObject(phpjson.NewObject().
		Set("type", phpjson.String("left_to_php")).
		Set("reason", phpjson.String(reason)).
		Set("classes", phpjson.List(list...)))
	if err != nil {
		return store.LogRow{}, err
	}
	l.Context = store.String(string(b))
	return l, nil
}

// noteLeftToPHP writes leftToPHPLog once per workflow and reason in this
// process (the deadline check runs every minute).
func (e *Engine) noteLeftToPHP(ctx context.Context, workflowID int64, reason string, classes []string) error {
	if _, seen := e.leftToPHP.LoadOrStore(fmt.Sprintf("%d/%s", workflowID, reason), true); seen {
		return nil
	}
	l, err := leftToPHPLog(workflowID, reason, classes)
	if err != nil {
		return err
	}
	return e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error { return tx.InsertLogs(l) })
}

// phpOnlyFor is phpOnly for a workflow read by id (nil when it cannot be
// read: the caller's own path reports that).
func (e *Engine) phpOnlyFor(ctx context.Context, workflowID int64, reason string) []string {
	if e.callables() != nil {
		return nil
	}
	row, err := e.store.GetWorkflow(ctx, workflowID)
	if err != nil || row == nil {
		return nil
	}
	state, err := workflow.ParseState([]byte(row.State))
	if err != nil {
		return nil
	}
	return e.phpOnly(state, reason)
}
