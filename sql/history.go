package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Log events of the workflow history operations.
const (
	LogWorkflowRewound = "workflow_rewound"
	LogWorkflowForked  = "workflow_forked"
)

// StateAtStep is the state_after JSON of a workflow's last step_completed
// or workflow_resumed event at step (ok false when there is none).
func (s *Store) StateAtStep(ctx context.Context, workflowID int64, step int) (state string, ok bool, err error) {
	var v sql.NullString
	err = s.db.GetContext(ctx, &v, s.query(qHsStateAtStep), workflowID, step)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", qHsStateAtStep, err)
	}
	return v.String, v.Valid, nil
}

// RewindWorkflow writes a rewound workflow's state and step, sets it
// running with its failure cleared, and buries its pending and processing
// jobs ("Superseded by workflow rewind").
func (w *WorkflowTx) RewindWorkflow(id int64, state []byte, step int) error {
	if _, err := w.exec(qHsRewindWorkflow, string(state), step, id); err != nil {
		return err
	}
	_, err := w.exec(qHsSupersedeJobs, id)
	return err
}

// InsertFork writes a running copy of a workflow and returns its id.
func (w *WorkflowTx) InsertFork(name string, state []byte, step, total int) (int64, error) {
	_, id, err := w.send(qHsInsertFork, name, string(state), step, total)
	return id, err
}

// ReplayedWorkflow is the row WorkflowReplayer::replay writes.
type ReplayedWorkflow struct {
	Name, Status string
	State        []byte
	Step, Total  int
	CompletedAt  sql.NullString
	FailedAt     sql.NullString
	ErrorMessage sql.NullString
}

// InsertReplayedWorkflow writes the workflow row of a replay.
func (w *WorkflowTx) InsertReplayedWorkflow(r ReplayedWorkflow) (int64, error) {
	_, id, err := w.send(qHsInsertReplayedWorkflow, r.Name, r.Status, string(r.State), r.Step, r.Total,
		r.CompletedAt, r.FailedAt, r.ErrorMessage)
	return id, err
}

// ReplayedEvent is one exported workflow_events row written to a replay
// (no job, no parent event). JSON columns are nil for NULL; CreatedAt
// NULL means now.
type ReplayedEvent struct {
	StepIndex                                   int
	StepName, StepType                          sql.NullString
	Handler, Event                              string
	Queue                                       sql.NullString
	Attempt, DurationMS                         sql.NullInt64
	Input, Output, StateBefore, StateAfter, Ctx []byte
	Artifacts, Chunks, Error                    []byte
	CreatedAt                                   sql.NullString
}

// ReplayedLog is one exported log row written to a replay (no job).
type ReplayedLog struct {
	StepIndex           sql.NullInt64
	Handler, Queue      string
	Event               string
	Attempt, DurationMS sql.NullInt64
	ErrorMessage        sql.NullString
	Context             []byte
	CreatedAt           sql.NullString
}

// ReplayedSignal, ReplayedDependency, ReplayedArtifact and ReplayedChunk
// are the other exported rows a replay copies.
type (
	ReplayedSignal struct {
		Name       string
		Payload    []byte
		ReceivedAt sql.NullString
	}
	ReplayedDependency struct {
		StepIndex            int
		DependencyWorkflowID int64
		SatisfiedAt          sql.NullString
		CreatedAt            sql.NullString
	}
	ReplayedArtifact struct {
		Key, Kind            string
		Content              string
		Metadata             []byte
		StepIndex            sql.NullInt64
		CreatedAt, UpdatedAt sql.NullString
	}
	ReplayedChunk struct {
		JobID      int64
		StepIndex  sql.NullInt64
		ChunkIndex int64
		Content    string
		CreatedAt  sql.NullString
	}
)

// ReplayedHistory is what a replay copies besides the workflow row.
type ReplayedHistory struct {
	Events       []ReplayedEvent
	Logs         []ReplayedLog
	Signals      []ReplayedSignal
	Dependencies []ReplayedDependency
	Artifacts    []ReplayedArtifact
	Chunks       []ReplayedChunk
}

// InsertReplayedHistory writes h for the replayed workflow id.
func (w *WorkflowTx) InsertReplayedHistory(id int64, h ReplayedHistory) error {
	for _, e := range h.Events {
		if _, err := w.exec(qHsInsertReplayedEvent, id, e.StepIndex, e.StepName, e.StepType, e.Handler, e.Event, e.Queue,
			e.Attempt, nullBytes(e.Input), nullBytes(e.Output), nullBytes(e.StateBefore), nullBytes(e.StateAfter),
			nullBytes(e.Ctx), nullBytes(e.Artifacts), nullBytes(e.Chunks), nullBytes(e.Error), e.DurationMS, e.CreatedAt); err != nil {
			return err
		}
	}
	for _, l := range h.Logs {
		if _, err := w.exec(qHsInsertReplayedLog, id, l.StepIndex, l.Handler, l.Queue, l.Event, l.Attempt, l.DurationMS,
			l.ErrorMessage, nullBytes(l.Context), l.CreatedAt); err != nil {
			return err
		}
	}
	for _, s := range h.Signals {
		if _, err := w.exec(qHsInsertReplayedSignal, id, s.Name, string(s.Payload), s.ReceivedAt); err != nil {
			return err
		}
	}
	for _, d := range h.Dependencies {
		if _, err := w.exec(qHsInsertReplayedDependency, id, d.StepIndex, d.DependencyWorkflowID, d.SatisfiedAt, d.CreatedAt); err != nil {
			return err
		}
	}
	for _, a := range h.Artifacts {
		if _, err := w.exec(qHsInsertReplayedArtifact, id, a.Key, a.Kind, a.Content, nullBytes(a.Metadata), a.StepIndex,
			a.CreatedAt, a.UpdatedAt); err != nil {
			return err
		}
	}
	for _, c := range h.Chunks {
		if _, err := w.exec(qHsInsertReplayedChunk, c.JobID, id, c.StepIndex, c.ChunkIndex, c.Content, c.CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

// InsertReplayMarker writes the workflow_replayed event of a replay.
func (w *WorkflowTx) InsertReplayMarker(id int64, step int, output, stateAfter, context []byte) error {
	_, err := w.exec(qHsInsertReplayMarker, id, step, string(output), string(stateAfter), string(context))
	return err
}
