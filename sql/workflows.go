package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// ErrWorkflowNotFound is returned when a workflow row is missing.
var ErrWorkflowNotFound = errors.New("workflow not found")

// Workflow log events (Queuety's LogEvent, workflow part).
const (
	EventWorkflowStarted   = "workflow_started"
	EventWorkflowCompleted = "workflow_completed"
	EventWorkflowFailed    = "workflow_failed"
)

// WorkflowRow is one row of the workflows table.
type WorkflowRow struct {
	ID               int64          `db:"id"`
	Name             string         `db:"name"`
	Status           string         `db:"status"`
	State            string         `db:"state"`
	CurrentStep      int            `db:"current_step"`
	TotalSteps       int            `db:"total_steps"`
	ParentWorkflowID sql.NullInt64  `db:"parent_workflow_id"`
	ParentStepIndex  sql.NullInt64  `db:"parent_step_index"`
	StartedAt        time.Time      `db:"started_at"`
	CompletedAt      sql.NullTime   `db:"completed_at"`
	FailedAt         sql.NullTime   `db:"failed_at"`
	ErrorMessage     sql.NullString `db:"error_message"`
	DeadlineAt       sql.NullTime   `db:"deadline_at"`
}

// StepJob is one job row a workflow step enqueues (workflow.StepJob as
// columns): status 'pending', attempts 0, available_at = app clock + Delay.
type StepJob struct {
	Queue            string
	Handler          string
	Payload          []byte
	Priority         int
	MaxAttempts      int
	StepIndex        int
	Delay            time.Duration
	ConcurrencyGroup string // "" = NULL
	ConcurrencyLimit int    // 0 = NULL
	CostUnits        int
	SessionID        string // "" = NULL: not session-bound
	WorkerSession    []byte // nil = NULL; the normalized worker_session JSON
}

// InsertWorkflow is everything a workflow dispatch writes (Queuety's
// WorkflowBuilder::dispatch in one transaction).
type InsertWorkflow struct {
	Name             string
	State            []byte
	TotalSteps       int
	ParentWorkflowID sql.NullInt64
	ParentStepIndex  sql.NullInt64
	DeadlineAt       sql.NullString
	// IdempotencyKey, when set, is looked up first and stored with the row.
	IdempotencyKey string
	// Queue is the queue of the workflow_started log row.
	Queue string
	Jobs  []StepJob
}

// MaxWorkflowSteps is the most steps a workflow row can hold: total_steps
// and step_index are TINYINT UNSIGNED in the plugin's schema.
const MaxWorkflowSteps = 255

// ErrTooManySteps is returned for a workflow of more than
// MaxWorkflowSteps steps, before anything is written (the server would
// refuse the row with a bare "Out of range value for column").
var ErrTooManySteps = errors.New("too many steps")

func (p InsertWorkflow) checkSteps() error {
	if p.TotalSteps > MaxWorkflowSteps {
		return fmt.Errorf("workflow %q has %d steps: %w (at most %d, the plugin's schema holds total_steps in a TINYINT UNSIGNED)",
			p.Name, p.TotalSteps, ErrTooManySteps, MaxWorkflowSteps)
	}
	return nil
}

// InsertWorkflow writes a workflow, its dispatch key, its first jobs and
// its workflow_started log in one transaction. With an idempotency key
// already used, the existing workflow's id is returned with existing=true
// and nothing is written.
func (s *Store) InsertWorkflow(ctx context.Context, p InsertWorkflow) (id int64, existing bool, err error) {
	if err := p.checkSteps(); err != nil {
		return 0, false, err
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		id, existing = 0, false
		if p.IdempotencyKey != "" {
			err := tx.GetContext(ctx, &id, s.query(qFindDispatchKey), p.IdempotencyKey)
			if err == nil {
				existing = true
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("dispatch key lookup: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, s.query(qInsertWorkflow), p.Name, string(p.State), p.TotalSteps,
			p.ParentWorkflowID, p.ParentStepIndex, p.DeadlineAt)
		if err != nil {
			return fmt.Errorf("insert workflow: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		if p.IdempotencyKey != "" {
			if _, err := tx.ExecContext(ctx, s.query(qInsertDispatchKey), p.IdempotencyKey, id); err != nil {
				return fmt.Errorf("insert dispatch key: %w", err)
			}
		}
		w := &WorkflowTx{s: s, tx: tx, utx: tx.Unsafe(), ctx: ctx}
		if err := w.InsertStepJobs(id, p.Jobs); err != nil {
			return err
		}
		return s.insertLogs(ctx, tx, []LogRow{WorkflowLog(id, p.Name, p.Queue, EventWorkflowStarted)})
	})
	if err != nil && p.IdempotencyKey != "" && isDuplicateKey(err) {
		// Another dispatch stored the key first: its workflow wins.
		if gerr := s.db.GetContext(ctx, &id, s.query(qFindDispatchKey), p.IdempotencyKey); gerr == nil {
			return id, true, nil
		}
	}
	if err != nil {
		return 0, false, err
	}
	return id, existing, nil
}

func isDuplicateKey(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

// WorkflowLog is a workflow-level log row: job and step NULL, handler the
// workflow name (or "" for workflow_failed).
func WorkflowLog(workflowID int64, handler, queue, event string) LogRow {
	return LogRow{WorkflowID: Int(workflowID), Handler: handler, Queue: queue, Event: event}
}

// GetWorkflow reads a workflow row without locking it.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (*WorkflowRow, error) {
	var r WorkflowRow
	err := s.unsafe.GetContext(ctx, &r, s.query(qGetWorkflow), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workflow %d: %w", id, ErrWorkflowNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get workflow %d: %w", id, err)
	}
	return &r, nil
}

// ClaimJobByID claims one pending job as a claim would and returns it
// (false when it was not pending). For tests and tools; workers claim in
// batches.
func (s *Store) ClaimJobByID(ctx context.Context, id int64, workerID string) (*JobRow, bool, error) {
	res, err := s.db.ExecContext(ctx, s.query(qClaimJobByID), workerID, id)
	if err != nil {
		return nil, false, fmt.Errorf("claim job %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, false, nil
	}
	var j JobRow
	if err := s.unsafe.GetContext(ctx, &j, s.query(qGetJob), id); err != nil {
		return nil, false, fmt.Errorf("read job %d: %w", id, err)
	}
	return &j, true, nil
}

// WorkflowEvent is one workflow_events row. The JSON columns hold exact
// bytes (nil = NULL).
type WorkflowEvent struct {
	WorkflowID  int64
	JobID       sql.NullInt64
	StepIndex   int
	StepName    sql.NullString
	StepType    sql.NullString
	Handler     string
	Event       string
	Queue       sql.NullString
	Attempt     sql.NullInt64
	Input       []byte
	Output      []byte
	StateBefore []byte
	StateAfter  []byte
	Context     []byte
	Artifacts   []byte
	Chunks      []byte
	Error       []byte
	DurationMS  sql.NullInt64
}

func nullBytes(b []byte) sql.NullString {
	if b == nil {
		return sql.NullString{}
	}
	return String(string(b))
}

// WorkflowTx is one workflow transaction: the engine's only way to the
// tables while it advances a workflow.
type WorkflowTx struct {
	s *Store
	// tx is what statements are sent on: the transaction, or the
	// connection of a pipelined one (pipe set, pipeline.go; never in a
	// batch); utx is the same for SELECT * reads into structs that map a
	// subset.
	tx, utx txConn
	pipe    *pipeline
	ctx     context.Context
	// logs and events are written at the end of the transaction, one
	// multi-row INSERT per table in the order they were added: a step
	// writes four to six of them, and a round trip each was a third of
	// its statements. Nothing reads them back inside the transaction.
	logs   []LogRow
	events []WorkflowEvent
	// In a WorkflowTxBatch (workflows_deferred.go): the batch, this body's
	// savepoint (issued before its first real statement) and the writes
	// it deferred.
	batch       *txBatch
	savepoint   string
	inSavepoint bool
	deferred    deferredWrites
	// assumed and localDone: rows written without being read first
	// (workflows_assumed.go).
	assumed   *WorkflowRow
	localDone *LocalStepDone
}

// WorkflowTx runs fn in a READ COMMITTED transaction, retried as a whole on
// deadlocks, so fn must not keep state across calls. On a cluster it begins
// causally (inFencedTx): a step's transition reads whether its attempt
// still holds the job, and writes nothing when it does not.
func (s *Store) WorkflowTx(ctx context.Context, fn func(*WorkflowTx) error) error {
	return s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		w := &WorkflowTx{s: s, tx: tx, utx: tx.Unsafe(), ctx: ctx}
		if err := fn(w); err != nil {
			return err
		}
		return w.finish()
	})
}

// finish ends a body that succeeded: every promised write was made, and
// the collected log and event rows are written.
func (w *WorkflowTx) finish() error {
	if w.localDone != nil {
		return fmt.Errorf("local step job %d: its completion was never written", w.localDone.JobID)
	}
	return w.flush()
}

// flush writes the log and event rows the transaction collected.
func (w *WorkflowTx) flush() error {
	if err := w.s.insertLogs(w.ctx, w.execer(qInsertLogs), w.logs); err != nil {
		return err
	}
	// Events carry whole states: insertRows bounds each statement's size.
	if err := insertRows(w, qInsertWorkflowEvent, w.events, (*WorkflowEvent).size, func(e *WorkflowEvent) []any {
		// Names come from the workflow's definition, which anyone can
		// write: cut them to their columns rather than lose the event.
		return []any{e.WorkflowID, e.JobID, e.StepIndex, fitNull(e.StepName, fitStepName), fitNull(e.StepType, fitShort),
			FitChars(e.Handler, 255), e.Event, fitNull(e.Queue, fitShort), e.Attempt, nullBytes(e.Input), nullBytes(e.Output),
			nullBytes(e.StateBefore), nullBytes(e.StateAfter), nullBytes(e.Context), nullBytes(e.Artifacts),
			nullBytes(e.Chunks), nullBytes(e.Error), e.DurationMS}
	}); err != nil {
		return err
	}
	w.logs, w.events = nil, nil
	return nil
}

func (e *WorkflowEvent) size() int {
	return len(e.Input) + len(e.Output) + len(e.StateBefore) + len(e.StateAfter) + len(e.Context) +
		len(e.Artifacts) + len(e.Chunks) + len(e.Error) + 256
}

// txConn is a transaction or the connection a pipelined one runs on.
type txConn interface {
	sqlx.ExecerContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// exec sends the named statement and returns its row count.
func (w *WorkflowTx) exec(name string, args ...any) (int64, error) {
	n, _, err := w.send(name, args...)
	return n, err
}

// execChecked is exec for a write whose row count is only checked: check
// gets it (nil: none). A pipelined transaction sends it with its next
// statement that needs an answer, and runs check then.
func (w *WorkflowTx) execChecked(name string, check func(n int64) error, args ...any) error {
	if w.pipe != nil {
		w.pipe.queue(pipedStmt{name: name, query: w.s.query(name), args: args, check: check})
		return nil
	}
	n, err := w.exec(name, args...)
	if err != nil || check == nil {
		return err
	}
	return check(n)
}

// send sends the named statement and returns its row count and insert
// id; in a pipelined transaction, with the statements queued before it.
func (w *WorkflowTx) send(name string, args ...any) (affected, id int64, err error) {
	if w.pipe != nil {
		return w.pipe.send(pipedStmt{name: name, query: w.s.query(name), args: args})
	}
	if err := w.real(); err != nil {
		return 0, 0, err
	}
	res, err := w.tx.ExecContext(w.ctx, w.s.query(name), args...)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	if affected, err = res.RowsAffected(); err != nil {
		return 0, 0, err
	}
	id, err = res.LastInsertId()
	return affected, id, err
}

// execer is what statements that return nothing the caller uses (multi-row
// INSERTs of logs and events) are sent on: queued in a pipelined
// transaction.
func (w *WorkflowTx) execer(name string) sqlx.ExecerContext {
	if w.pipe != nil {
		return pipedExecer{p: w.pipe, name: name}
	}
	return w.tx
}

// LockWorkflow reads and locks a workflow row (nil when missing).
func (w *WorkflowTx) LockWorkflow(id int64) (*WorkflowRow, error) {
	if r, ok := w.lockedWorkflow(id); ok {
		return r, nil
	}
	if err := w.real(); err != nil {
		return nil, err
	}
	var r WorkflowRow
	err := w.utx.GetContext(w.ctx, &r, w.s.query(qLockWorkflow), id)
	found := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock workflow %d: %w", id, err)
	}
	if a := w.assumedWorkflow(id); a != nil {
		if err := w.checkAssumed(a, &r, found); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, nil
	}
	return &r, nil
}

// LockJob reads and locks a job row (nil when missing).
func (w *WorkflowTx) LockJob(id int64) (*JobRow, error) {
	if r, ok := w.lockedJob(id); ok {
		return r, nil
	}
	if err := w.real(); err != nil {
		return nil, err
	}
	var r JobRow
	err := w.utx.GetContext(w.ctx, &r, w.s.query(qLockJob), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock job %d: %w", id, err)
	}
	return &r, nil
}

// SetState writes the state column only.
func (w *WorkflowTx) SetState(id int64, state []byte) error {
	_, err := w.exec(qUpdateWorkflowState, string(state), id)
	return err
}

// Advance writes the state and moves current_step.
func (w *WorkflowTx) Advance(id int64, state []byte, step int) error {
	if w.batch != nil {
		w.deferWorkflow(workflowWrite{id: id, state: state, step: step})
		return nil
	}
	if a := w.assumedWorkflow(id); a != nil {
		return w.writeAssumed(a, state, step, false)
	}
	_, err := w.exec(qAdvanceWorkflow, string(state), step, id)
	return err
}

// Complete writes the state, moves current_step past the end and marks the
// workflow completed.
func (w *WorkflowTx) Complete(id int64, state []byte, step int) error {
	if w.batch != nil {
		w.deferWorkflow(workflowWrite{id: id, state: state, step: step, complete: true})
		return nil
	}
	if a := w.assumedWorkflow(id); a != nil {
		return w.writeAssumed(a, state, step, true)
	}
	_, err := w.exec(qCompleteWorkflow, string(state), step, id)
	return err
}

// MarkFailed fails a live workflow and reports whether the row changed.
func (w *WorkflowTx) MarkFailed(id int64, state []byte, message string) (bool, error) {
	n, err := w.exec(qFailWorkflow, FitText(message), string(state), id)
	return n > 0, err
}

// CompleteJob marks a pending or processing job completed.
func (w *WorkflowTx) CompleteJob(id int64) error {
	if w.batch != nil {
		delete(w.batch.jobs, id)
		w.deferred.completedJobs = append(w.deferred.completedJobs, id)
		return nil
	}
	if d := w.localDone; d != nil && d.JobID == id {
		return w.completeLocalStep(d)
	}
	_, err := w.exec(qCompleteWorkflowJob, id)
	return err
}

// CompleteJobAny marks a job completed whatever its status.
func (w *WorkflowTx) CompleteJobAny(id int64) error {
	_, err := w.exec(qCompleteWorkflowJobAny, id)
	return err
}

// BuryJob buries one job with a message.
func (w *WorkflowTx) BuryJob(id int64, message string) error {
	_, err := w.exec(qBuryJob, FitText(message), id)
	return err
}

// BuryStepJobs buries the active jobs of one step except one (0: none).
func (w *WorkflowTx) BuryStepJobs(workflowID int64, step int, message string, except int64) error {
	_, err := w.exec(qBuryStepJobs, FitText(message), workflowID, step, except)
	return err
}

// BuryWorkflowJobs buries the active jobs of a workflow except one (0: none).
func (w *WorkflowTx) BuryWorkflowJobs(workflowID int64, message string, except int64) error {
	_, err := w.exec(qBuryWorkflowJobs, FitText(message), workflowID, except)
	return err
}

// CountCompletedStepJobs counts every completed job of a step.
func (w *WorkflowTx) CountCompletedStepJobs(workflowID int64, step int) (int, error) {
	if err := w.real(); err != nil {
		return 0, err
	}
	var n int
	if err := w.tx.GetContext(w.ctx, &n, w.s.query(qCountCompletedStepJobs), workflowID, step); err != nil {
		return 0, fmt.Errorf("count completed step jobs: %w", err)
	}
	return n, nil
}

// InsertStepJobs inserts a step's jobs for a workflow, as Queue::dispatch.
func (w *WorkflowTx) InsertStepJobs(workflowID int64, jobs []StepJob) error {
	rows := make([]pendingStepJob, len(jobs))
	for i, j := range jobs {
		rows[i] = pendingStepJob{workflowID: workflowID, availableAt: DateTime(w.s.clock.Now().Add(j.Delay)), job: j}
	}
	if w.batch != nil {
		w.deferred.stepJobs = append(w.deferred.stepJobs, rows...)
		return nil
	}
	if len(rows) == 1 {
		_, err := w.exec(qInsertJob, stepJobArgs(workflowID, rows[0].availableAt, rows[0].job)...)
		return err
	}
	// Several rows (a parallel step's branches, a for_each step's: up to
	// --max-for-each-items) go in multi-row INSERTs, not a round trip
	// each: 10,000 branches took 6 s one by one.
	return insertRows(w, qInsertJob, rows, (*pendingStepJob).size, func(p *pendingStepJob) []any {
		return stepJobArgs(p.workflowID, p.availableAt, p.job)
	})
}

// InsertLogs adds log rows, written in order at the end of the transaction.
func (w *WorkflowTx) InsertLogs(logs ...LogRow) error {
	w.logs = append(w.logs, logs...)
	return nil
}

// InsertEvents adds workflow_events rows, written in order at the end of
// the transaction.
func (w *WorkflowTx) InsertEvents(events ...WorkflowEvent) error {
	w.events = append(w.events, events...)
	return nil
}

// RetryJob puts a failed processing attempt back to pending, available
// after delay (app clock).
func (w *WorkflowTx) RetryJob(id int64, delay time.Duration) error {
	_, err := w.exec(qRetryWorkflowJob, DateTime(w.s.clock.Now().Add(delay)), id)
	return err
}
