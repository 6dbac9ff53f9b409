package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Deferred writes of a step batch.
//
// A step's completion locks its workflow and job, writes the state, the
// job's status and the next step's job, and those five statements were
// each a round trip of their own even inside a batch. In a batch
// (WorkflowTxBatch) they are instead:
//
//   - read from rows the batch locked up front, for all its bodies, with
//     one SELECT … FOR UPDATE per table (in id order, so two batches take
//     their locks in the same order);
//   - deferred, and sent for all the batch's bodies together: one UPDATE
//     of the workflows, one of the completed jobs, one multi-row INSERT of
//     the next steps' jobs.
//
// A body's deferred writes are its own until it returns: a failing body's
// are dropped with its log and event rows. Every other statement is sent
// as it comes ("a real statement"), and before it is, everything deferred
// so far is sent in order (the bodies before, then this body's, inside its
// savepoint), and the locked rows are forgotten: a real statement sees and
// may change them. Reads therefore always see the writes before them, as
// in a transaction of single statements; the hot path of a step just
// never sends a real statement.

// txBatch is what the bodies of one WorkflowTxBatch share.
type txBatch struct {
	// workflows and jobs are rows locked by the batch and not written
	// since (a write removes its row); nil once a real statement ran.
	workflows map[int64]WorkflowRow
	jobs      map[int64]JobRow
	// pending are the finished bodies whose deferred writes are not sent.
	pending []*WorkflowTx
}

// deferredWrites are a body's writes not sent yet.
type deferredWrites struct {
	workflows     []workflowWrite
	completedJobs []int64
	stepJobs      []pendingStepJob
}

func (d *deferredWrites) empty() bool {
	return len(d.workflows) == 0 && len(d.completedJobs) == 0 && len(d.stepJobs) == 0
}

// workflowWrite is Advance (complete false) or Complete of one row.
type workflowWrite struct {
	id       int64
	state    []byte
	step     int
	complete bool
}

type pendingStepJob struct {
	workflowID  int64
	availableAt string
	job         StepJob
	// claimedBy, for a job inserted already claimed (a chained step), is
	// the worker; id receives the row's id once the insert is sent.
	claimedBy string
	id        *int64
}

// lockBatch reads and locks the rows the bodies start from.
func (s *Store) lockBatch(ctx context.Context, tx *sqlx.Tx, workflowIDs, jobIDs []int64) (*txBatch, error) {
	workflows, err := lockByID(ctx, s, tx, qLockWorkflows, workflowIDs, func(r *WorkflowRow) int64 { return r.ID })
	if err != nil {
		return nil, err
	}
	jobs, err := lockByID(ctx, s, tx, qLockJobs, jobIDs, func(r *JobRow) int64 { return r.ID })
	if err != nil {
		return nil, err
	}
	return &txBatch{workflows: workflows, jobs: jobs}, nil
}

// lockByID runs a lock-* query for ids and keys the rows by id.
func lockByID[T any](ctx context.Context, s *Store, tx *sqlx.Tx, name string, ids []int64, id func(*T) int64) (map[int64]T, error) {
	out := make(map[int64]T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows := make([]T, 0, len(ids)) // sized: the scan appends without growing
	if err := s.selectIn(ctx, tx.Unsafe(), &rows, name, ids); err != nil {
		return nil, err
	}
	for i := range rows {
		out[id(&rows[i])] = rows[i]
	}
	return out, nil
}

// selectIn runs a named query of ids ("IN (?)") on db, a transaction or
// the pool (unsafe ones for SELECT *).
func (s *Store) selectIn(ctx context.Context, db sqlx.QueryerContext, dest any, name string, ids []int64) error {
	q, args, err := s.in(name, ids)
	if err != nil {
		return err
	}
	if err := sqlx.SelectContext(ctx, db, dest, q, args...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// lockedWorkflow is the batch's locked, unwritten copy of a workflow row.
func (w *WorkflowTx) lockedWorkflow(id int64) (*WorkflowRow, bool) {
	if w.batch == nil {
		return nil, false
	}
	r, ok := w.batch.workflows[id]
	return &r, ok
}

func (w *WorkflowTx) lockedJob(id int64) (*JobRow, bool) {
	if w.batch == nil {
		return nil, false
	}
	r, ok := w.batch.jobs[id]
	return &r, ok
}

// real readies the transaction for a statement that is not deferred (see
// above); outside a batch there is nothing to do. An error from sending
// another body's writes aborts the batch.
func (w *WorkflowTx) real() error {
	b := w.batch
	if b == nil {
		if w.pipe != nil {
			return w.pipe.flush() // reads see the queued writes, checked
		}
		return nil
	}
	if err := w.flushPending(); err != nil {
		return fmt.Errorf("%w: %w", ErrBatchAborted, err)
	}
	if !w.inSavepoint {
		if _, err := w.tx.ExecContext(w.ctx, "SAVEPOINT "+w.savepoint); err != nil {
			return fmt.Errorf("%w: savepoint: %w", ErrBatchAborted, err)
		}
		w.inSavepoint = true
	}
	b.workflows, b.jobs = nil, nil
	own := w.deferred
	w.deferred = deferredWrites{}
	return w.sendWrites(own)
}

// flushPending sends the deferred writes of the finished bodies.
func (w *WorkflowTx) flushPending() error {
	b := w.batch
	if len(b.pending) == 0 {
		return nil
	}
	var all deferredWrites
	for _, p := range b.pending {
		all.workflows = append(all.workflows, p.deferred.workflows...)
		all.completedJobs = append(all.completedJobs, p.deferred.completedJobs...)
		all.stepJobs = append(all.stepJobs, p.deferred.stepJobs...)
		p.deferred = deferredWrites{}
	}
	b.pending = nil
	return w.sendWrites(all)
}

// deferWorkflow records Advance or Complete of a row. A second write of
// the same row replaces the first as applying both in turn would: the
// later state and step, completed if either completed.
func (w *WorkflowTx) deferWorkflow(ww workflowWrite) {
	delete(w.batch.workflows, ww.id)
	for i := range w.deferred.workflows {
		if prev := &w.deferred.workflows[i]; prev.id == ww.id {
			ww.complete = ww.complete || prev.complete
			*prev = ww
			return
		}
	}
	w.deferred.workflows = append(w.deferred.workflows, ww)
}

// sendWrites sends deferred writes: the jobs completed, the workflows
// written, the jobs inserted, each as few statements as their size allows.
func (w *WorkflowTx) sendWrites(d deferredWrites) error {
	if d.empty() {
		return nil
	}
	if len(d.completedJobs) > 0 {
		where, args := idRanges(d.completedJobs)
		q := strings.Replace(w.s.query(qCompleteWorkflowJobs), "/*ids*/", where, 1)
		if _, err := w.tx.ExecContext(w.ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", qCompleteWorkflowJobs, err)
		}
	}
	for rest := mergeWorkflowWrites(d.workflows); len(rest) > 0; {
		n := batchPrefix(rest, func(ww *workflowWrite) int { return len(ww.state) + 64 })
		if err := w.updateWorkflows(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	var plain, claimed []pendingStepJob
	for _, j := range d.stepJobs {
		if j.claimedBy != "" {
			claimed = append(claimed, j)
		} else {
			plain = append(plain, j)
		}
	}
	if err := insertRows(w, qInsertJob, plain, (*pendingStepJob).size, func(p *pendingStepJob) []any {
		return stepJobArgs(p.workflowID, p.availableAt, p.job)
	}); err != nil {
		return err
	}
	for rest := claimed; len(rest) > 0; {
		n := batchPrefix(rest, (*pendingStepJob).size)
		if err := w.insertClaimed(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (p *pendingStepJob) size() int { return len(p.job.Payload) + len(p.job.WorkerSession) + 256 }

// insertClaimed inserts chained step jobs (already claimed) and learns
// their ids. A multi-row INSERT reports only its first id; the others
// follow it by auto_increment_increment when the server hands a simple
// INSERT consecutive ids (innodb_autoinc_lock_mode 0 or 1, MariaDB's
// default), and are read back otherwise (2, MySQL 8's: interleaved).
// Only a batch defers these, and a batch is never pipelined, so the
// INSERT's result is the server's.
func (w *WorkflowTx) insertClaimed(jobs []pendingStepJob) error {
	res, err := insertTuples(w, qInsertClaimedStepJob, jobs, func(p *pendingStepJob) []any {
		return claimedStepJobArgs(p.workflowID, p.job, p.claimedBy)
	})
	if err != nil {
		return err
	}
	if step, ok := w.s.consecutiveIDs(w.ctx); ok {
		first, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("%s: %w", qInsertClaimedStepJob, err)
		}
		for i, j := range jobs {
			*j.id = first + int64(i)*step
		}
		return nil
	}
	byOwner := map[string][]pendingStepJob{}
	for _, j := range jobs {
		byOwner[j.claimedBy] = append(byOwner[j.claimedBy], j)
	}
	for owner, group := range byOwner {
		steps := make([]string, len(group))
		args := make([]any, 0, 2*len(group)+1)
		for i, j := range group {
			steps[i] = "(workflow_id = ? AND step_index = ?)"
			args = append(args, j.workflowID, j.job.StepIndex)
		}
		q := strings.Replace(w.s.query(qClaimedStepJobs), "/*steps*/", strings.Join(steps, " OR "), 1)
		args = append(args, owner)
		var rows []struct {
			ID         int64 `db:"id"`
			WorkflowID int64 `db:"workflow_id"`
			StepIndex  int   `db:"step_index"`
		}
		if err := w.tx.SelectContext(w.ctx, &rows, q, args...); err != nil {
			return fmt.Errorf("%s: %w", qClaimedStepJobs, err)
		}
		type key struct {
			wf   int64
			step int
		}
		found := make(map[key]int64, len(rows))
		for _, r := range rows {
			found[key{r.WorkflowID, r.StepIndex}] = r.ID
		}
		for _, j := range group {
			id, ok := found[key{j.workflowID, j.job.StepIndex}]
			if !ok {
				return fmt.Errorf("%s: no row for workflow %d step %d", qClaimedStepJobs, j.workflowID, j.job.StepIndex)
			}
			*j.id = id
		}
	}
	return nil
}

// mergeWorkflowWrites folds writes of one row made by different bodies
// (each body folded its own already) in order, as deferWorkflow does.
func mergeWorkflowWrites(ws []workflowWrite) []workflowWrite {
	at := make(map[int64]int, len(ws))
	out := ws[:0:0]
	for _, ww := range ws {
		if i, ok := at[ww.id]; ok {
			ww.complete = ww.complete || out[i].complete
			out[i] = ww
			continue
		}
		at[ww.id] = len(out)
		out = append(out, ww)
	}
	return out
}

// maxWriteBatchBytes caps the values one multi-row statement carries, well
// under max_allowed_packet: states, events and payloads can be large.
const maxWriteBatchBytes = 1 << 20

// batchPrefix is how many leading items fit in one statement (at least one).
func batchPrefix[T any](items []T, size func(*T) int) int {
	n, total := 0, 0
	for n < len(items) && (n == 0 || total+size(&items[n]) < maxWriteBatchBytes) {
		total += size(&items[n])
		n++
	}
	return n
}

// insertRows runs a one-row INSERT … VALUES (…) named query for all rows,
// its values tuple repeated, in as few statements as maxWriteBatchBytes
// allows.
func insertRows[T any](w *WorkflowTx, name string, rows []T, size func(*T) int, args func(*T) []any) error {
	for rest := rows; len(rest) > 0; {
		n := batchPrefix(rest, size)
		if _, err := insertTuples(w, name, rest[:n], args); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// insertTuples is one statement of insertRows.
func insertTuples[T any](w *WorkflowTx, name string, rows []T, args func(*T) []any) (sql.Result, error) {
	q := w.s.query(name)
	tuple := q[strings.LastIndex(q, "VALUES")+len("VALUES"):]
	var b strings.Builder
	b.WriteString(q)
	var all []any
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
			b.WriteString(tuple)
		}
		all = append(all, args(&rows[i])...)
	}
	res, err := w.execer(name).ExecContext(w.ctx, b.String(), all...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// updateWorkflows is advance-workflows: one UPDATE of several rows.
func (w *WorkflowTx) updateWorkflows(ws []workflowWrite) error {
	var state, step strings.Builder
	var stateArgs, stepArgs, doneArgs []any
	ids := make([]int64, 0, len(ws))
	for _, ww := range ws {
		state.WriteString(" WHEN ? THEN ?")
		step.WriteString(" WHEN ? THEN ?")
		stateArgs = append(stateArgs, ww.id, string(ww.state))
		stepArgs = append(stepArgs, ww.id, ww.step)
		if ww.complete {
			doneArgs = append(doneArgs, ww.id)
		}
		ids = append(ids, ww.id)
	}
	done := "FALSE"
	if len(doneArgs) > 0 {
		done = "id IN (?" + strings.Repeat(",?", len(doneArgs)-1) + ")"
	}
	where, idArgs := idRanges(ids)
	q := strings.NewReplacer("/*state*/", state.String(), "/*step*/", step.String(),
		"/*done*/", done, "/*ids*/", where).Replace(w.s.query(qAdvanceWorkflows))
	args := slices.Concat(stateArgs, stepArgs, doneArgs, doneArgs, idArgs)
	if _, err := w.tx.ExecContext(w.ctx, q, args...); err != nil {
		return fmt.Errorf("%s: %w", qAdvanceWorkflows, err)
	}
	return nil
}

// stepJobArgs are insert-job's arguments for a step job.
func stepJobArgs(workflowID int64, availableAt string, j StepJob) []any {
	group, limit := concurrencyColumns(j.ConcurrencyGroup, j.ConcurrencyLimit)
	return []any{j.Queue, j.Handler, string(j.Payload), sql.NullString{}, j.Priority,
		max(1, j.MaxAttempts), availableAt, Int(workflowID), Int(int64(j.StepIndex)), sql.NullInt64{},
		sql.NullInt64{}, group, limit, max(0, j.CostUnits),
		sql.NullString{String: j.SessionID, Valid: j.SessionID != ""}, nullBytes(j.WorkerSession)}
}

// claimedStepJobArgs are insert-claimed-step-job's arguments.
func claimedStepJobArgs(workflowID int64, j StepJob, owner string) []any {
	return []any{j.Queue, j.Handler, string(j.Payload), j.Priority, max(1, j.MaxAttempts), owner,
		workflowID, j.StepIndex, max(0, j.CostUnits)}
}

// batchIDs are the distinct workflow and job ids a batch's bodies start
// from, in id order.
func batchIDs(bodies []BatchBody) (workflowIDs, jobIDs []int64) {
	wf, jobs := map[int64]bool{}, map[int64]bool{}
	for _, b := range bodies {
		if b.WorkflowID > 0 {
			wf[b.WorkflowID] = true
		}
		if b.JobID > 0 {
			jobs[b.JobID] = true
		}
	}
	return slices.Sorted(maps.Keys(wf)), slices.Sorted(maps.Keys(jobs))
}
