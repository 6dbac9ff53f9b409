package engine

import (
	"context"
	"slices"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// runCompensations is run_compensations, after a failure of a workflow
// that opted in with compensate_on_failure (reason "failure"): the
// compensation stack runs in reverse with each entry's public state
// snapshot; a handler error is logged as a `debug` row and ignored; a
// handler class without a Go compensation runs in the CallableRunner when
// there is one, else is skipped (as PHP skips a class that does not
// exist). Then _compensated and _compensation_cause
// are set and the state is written, outside the failure's transaction, as
// in PHP.
func (e *Engine) runCompensations(ctx context.Context, workflowID int64, state *workflow.State, reason string) error {
	if _, done := state.Compensated(); done {
		return nil
	}
	var logs []store.LogRow
	var left []string
	stack := state.CompensationStack()
	for i := len(stack) - 1; i >= 0; i-- {
		entry := stack[i]
		fn, ok := e.lookupCompensation(entry.Handler)
		if !ok {
			// A PHP class, and no PHP pool to run it in.
			if !slices.Contains(left, entry.Handler) {
				left = append(left, entry.Handler)
			}
			continue
		}
		if err := callCompensation(ctx, fn, entry); err != nil {
			l := store.WorkflowLog(workflowID, entry.Handler, "default", "debug")
			l.ErrorMessage = store.String(err.Error())
			ctxObj := phpjson.NewObject().Set("type", phpjson.String("compensation_failed")).Set("reason", phpjson.String(reason))
			b, encErr := encodeObject(ctxObj)
			if encErr != nil {
				return encErr
			}
			l.Context = store.String(string(b))
			logs = append(logs, l)
		}
	}
	if len(left) > 0 {
		// Not compensated: say which ones did not run, and leave
		// _compensated unset rather than claim they did.
		l, err := leftToPHPLog(workflowID, reason, left)
		if err != nil {
			return err
		}
		logs = append(logs, l)
		return e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error { return tx.InsertLogs(logs...) })
	}
	state.Set(workflow.KeyCompensated, phpjson.Bool(true))
	state.Set(workflow.KeyCompensationCause, phpjson.String(reason))
	b, err := state.Encode()
	if err != nil {
		return err
	}
	return e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		if err := tx.InsertLogs(logs...); err != nil {
			return err
		}
		return tx.SetState(workflowID, b)
	})
}

func callCompensation(ctx context.Context, fn workflow.CompensationFunc, entry workflow.CompensationEntry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = runtimeErrorf("panic in compensation %s: %v", entry.Handler, r)
		}
	}()
	return fn(ctx, entry.State, entry.Payload)
}

// afterFailure runs the compensations a failure asked for, once its
// transaction committed.
func (e *Engine) afterFailure(ctx context.Context, a *Advance) error {
	if a == nil || !a.compensate {
		return nil
	}
	return e.runCompensations(ctx, a.wf.ID, a.state, "failure")
}
