package machine

import (
	"encoding/json"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// The statuses of a machine (StateMachineStatus).
const (
	StatusRunning      = machineRunning
	StatusWaitingEvent = machineWaitingEvent
	StatusCompleted    = machineCompleted
	StatusFailed       = machineFailed
	StatusPaused       = machinePaused
	StatusCancelled    = machineCancelled
)

// Status is a state machine as StateMachine::get_status reports
// it.
type Status struct {
	ID                int64           `json:"machine_id"`
	Name              string          `json:"name"`
	Status            string          `json:"status"`
	CurrentState      string          `json:"current_state"`
	State             json.RawMessage `json:"state"`
	AvailableEvents   []string        `json:"available_events"`
	DefinitionVersion *string         `json:"definition_version"`
	DefinitionHash    *string         `json:"definition_hash"`
	IdempotencyKey    *string         `json:"idempotency_key"`
	ErrorMessage      *string         `json:"error_message"`
	CurrentAction     *string         `json:"current_action"`
	TerminalStatus    *string         `json:"terminal_status"`
	StartedAt         time.Time       `json:"started_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	CompletedAt       *time.Time      `json:"completed_at"`
	FailedAt          *time.Time      `json:"failed_at"`
}

// Event is one row of a machine's timeline; JSON columns are their stored
// bytes.
type Event struct {
	ID             int64           `json:"id"`
	JobID          *int64          `json:"job_id"`
	StateName      string          `json:"state_name"`
	Handler        *string         `json:"handler"`
	Event          string          `json:"event"`
	EventName      *string         `json:"event_name"`
	TransitionName *string         `json:"transition_name"`
	Attempt        *int64          `json:"attempt"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	StateAfter     json.RawMessage `json:"state_after"`
	Error          json.RawMessage `json:"error"`
	DurationMS     *int64          `json:"duration_ms"`
	CreatedAt      time.Time       `json:"created_at"`
}

// StatusOf is a machine row as StateMachine::get_status reports it.
func StatusOf(r store.MachineRow) Status {
	def := asArray(parsePayloadLenient(r.Definition))
	sd := asArray(get(asArray(get(def, "states")), r.CurrentState))
	events := []string{}
	seen := map[string]bool{}
	if l, ok := get(sd, "transitions").AsList(); ok {
		for _, t := range l {
			ev := ""
			if isArray(t) {
				ev = scalarString(get(asArray(t), "event"), "")
			}
			if !seen[ev] {
				seen[ev] = true
				events = append(events, ev)
			}
		}
	}
	state, _ := phpjson.Encode(objVal(asArray(parsePayloadLenient(r.State))))
	s := Status{ID: r.ID, Name: r.Name, Status: r.Status, CurrentState: r.CurrentState, State: state,
		AvailableEvents:   events,
		DefinitionVersion: ptrStr(r.DefinitionVersion.String, r.DefinitionVersion.Valid && r.DefinitionVersion.String != ""),
		DefinitionHash:    ptrStr(r.DefinitionHash.String, r.DefinitionHash.Valid && r.DefinitionHash.String != ""),
		IdempotencyKey:    ptrStr(r.IdempotencyKey.String, r.IdempotencyKey.Valid && r.IdempotencyKey.String != ""),
		ErrorMessage:      ptrStr(r.ErrorMessage.String, r.ErrorMessage.Valid && r.ErrorMessage.String != ""),
		StartedAt:         r.StartedAt, UpdatedAt: r.UpdatedAt}
	if a := handlerDefOf(sd, "action", "action_class"); a != nil {
		s.CurrentAction = &a.class
	}
	if ts, ok := get(sd, "terminal_status").AsString(); ok {
		s.TerminalStatus = &ts
	}
	if r.CompletedAt.Valid {
		s.CompletedAt = &r.CompletedAt.Time
	}
	if r.FailedAt.Valid {
		s.FailedAt = &r.FailedAt.Time
	}
	return s
}

// EventOf is a timeline row as MachineTimeline reports it.
func EventOf(e store.MachineEvent) Event {
	return Event{ID: e.ID, JobID: ptrInt(e.JobID.Int64, e.JobID.Valid), StateName: e.StateName,
		Handler: ptrStr(e.Handler.String, e.Handler.Valid), Event: e.Event,
		EventName:      ptrStr(e.EventName.String, e.EventName.Valid),
		TransitionName: ptrStr(e.TransitionName.String, e.TransitionName.Valid),
		Attempt:        ptrInt(e.Attempt.Int64, e.Attempt.Valid), Input: rawOrNull(e.Input.String, e.Input.Valid),
		Output: rawOrNull(e.Output.String, e.Output.Valid), StateAfter: rawOrNull(e.StateAfter.String, e.StateAfter.Valid),
		Error: rawOrNull(e.Error.String, e.Error.Valid), DurationMS: ptrInt(e.DurationMS.Int64, e.DurationMS.Valid),
		CreatedAt: e.CreatedAt}
}

func ptrStr(s string, ok bool) *string {
	if !ok {
		return nil
	}
	return &s
}

func ptrInt(n int64, ok bool) *int64 {
	if !ok {
		return nil
	}
	return &n
}

func rawOrNull(s string, ok bool) json.RawMessage {
	if !ok {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}
