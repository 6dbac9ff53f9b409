package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Rows a transaction writes without reading them first.
//
// A local activity's outcome transaction (internal/engine/local_activity.go)
// settles rows its own worker wrote when the attempt started: the
// workflow's status, step and state, the claim on the step job, the
// execution and the attempt. Locking and reading them again costs round
// trips a chained step does not pay, so the transaction writes them
// fenced on what it knows instead: the workflow's next state "where
// status, step and state are still the ones committed", the job,
// execution and attempt completed "where the claim and the attempt still
// hold". A fence that holds writes exactly what the reading transaction
// would have (it locks the row as its first write does). One that fails
// fails the transaction with ErrAssumptionFailed; the caller rolls back
// and runs it again the ordinary way.
//
// The workflow row's first write keeps the lock order of every other
// workflow transaction (the workflow, then its job): the fenced Advance or
// Complete comes before the fenced CompleteJob, as finalize writes them.

// ErrAssumptionFailed is a fenced write of an assumed row (AssumeWorkflow,
// CompleteJobAsLocalStep) that found the row changed by someone else.
var ErrAssumptionFailed = errors.New("a row the transaction assumed unchanged has changed")

// AssumeWorkflow lets the transaction write r without locking it first: r
// is the row as its caller last committed it. The next Advance or Complete
// of r.ID is fenced on r's status, current step and state (byte for byte)
// and fails with ErrAssumptionFailed when another writer changed one; a
// LockWorkflow of it before that reads the row and fails the same way when
// it differs. Until then no other write of the row may be sent. Outside a
// WorkflowTxBatch only.
func (w *WorkflowTx) AssumeWorkflow(r *WorkflowRow) {
	c := *r
	w.assumed = &c
}

// LocalStepDone is a local attempt's success as CompleteJob writes it.
type LocalStepDone struct {
	JobID    int64
	Owner    string // the claim: reserved_by and attempts
	Attempts int
	// The execution and its running attempt.
	ExecutionID     int64
	AttemptID       string
	Result, History []byte
	Now             time.Time
}

// CompleteJobAsLocalStep makes the next CompleteJob(d.JobID) complete the
// job, its execution and its attempt in one statement fenced on the claim
// and the attempt; it fails with ErrAssumptionFailed when one moved. The
// transaction fails if it ends before that CompleteJob.
func (w *WorkflowTx) CompleteJobAsLocalStep(d LocalStepDone) { w.localDone = &d }

// assumedWorkflow is the assumption on workflow id, if any.
func (w *WorkflowTx) assumedWorkflow(id int64) *WorkflowRow {
	if w.assumed == nil || w.assumed.ID != id {
		return nil
	}
	return w.assumed
}

// writeAssumed is Advance or Complete of the assumed row r.
func (w *WorkflowTx) writeAssumed(r *WorkflowRow, state []byte, step int, complete bool) error {
	w.assumed = nil
	name := qAdvanceAssumedWorkflow
	if complete {
		name = qCompleteAssumedWorkflow
	}
	sum := sha256.Sum256([]byte(r.State))
	id := r.ID
	return w.execChecked(name, func(n int64) error {
		if n != 1 {
			return fmt.Errorf("workflow %d: %w", id, ErrAssumptionFailed)
		}
		return nil
	}, string(state), step, r.ID, r.Status, r.CurrentStep, hex.EncodeToString(sum[:]))
}

// checkAssumed compares the locked row got (found: it exists) with the
// assumption r.
func (w *WorkflowTx) checkAssumed(r, got *WorkflowRow, found bool) error {
	w.assumed = nil
	if !found || got.Status != r.Status || got.CurrentStep != r.CurrentStep || got.State != r.State {
		return fmt.Errorf("workflow %d: %w", r.ID, ErrAssumptionFailed)
	}
	return nil
}

// completeLocalStep is CompleteJob of the job of d.
func (w *WorkflowTx) completeLocalStep(d *LocalStepDone) error {
	w.localDone = nil
	now := d.Now.UTC()
	job, attempt := d.JobID, d.AttemptID
	return w.execChecked(qCompleteLocalStep, func(n int64) error {
		if n != 3 {
			return fmt.Errorf("local step job %d (attempt %s): %w", job, attempt, ErrAssumptionFailed)
		}
		return nil
	}, string(d.Result), string(d.History), now, now, now,
		d.JobID, d.Owner, d.Attempts, d.ExecutionID, d.AttemptID, d.AttemptID)
}
