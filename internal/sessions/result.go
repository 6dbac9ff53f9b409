package sessions

import (
	"encoding/json"
	"strconv"
	"time"
)

// Result is the answer to a lifecycle operation. It marshals to the
// schema's workerSessionOperationResult: the HTTP status sits in Status
// (never overwritten by the session's status, spec ⚠4) and the session
// snapshot under "session".
type Result struct {
	Admitted bool
	// Status is the HTTP status: 201 created, 200 other successes, else
	// HTTPStatus(Reason).
	Status  int
	Reason  string // "" (null) when admitted
	Outcome string // "" when refused
	Session *Snapshot
	// ActivityTaskID is the admitted job's id (decimal) for a job
	// admission; nil for an explicit create. Written (as null or the id)
	// only for created, reused and reacquired.
	ActivityTaskID *string
	Error          string
	// MissingRequirements comes with session_requirements_not_met.
	MissingRequirements []string
	// MaxConcurrentWorkerSessions comes with worker_session_limit_exceeded
	// when the worker has a limit; MaxConcurrentActivities with
	// session_activity_limit_exceeded.
	MaxConcurrentWorkerSessions *int
	MaxConcurrentActivities     *int
	// WorkerID comes with worker_not_registered (the 412 body names it).
	WorkerID string
	// RegisteredTaskQueue and RequestedSessionQueue come with an explicit
	// create's session_queue_mismatch.
	RegisteredTaskQueue   string
	RequestedSessionQueue string
}

type resultJSON struct {
	Admitted                    bool            `json:"admitted"`
	Outcome                     string          `json:"outcome,omitempty"`
	Session                     *Snapshot       `json:"session,omitempty"`
	ActivityTaskID              json.RawMessage `json:"activity_task_id,omitempty"`
	Status                      int             `json:"status"`
	Reason                      *string         `json:"reason"`
	Error                       string          `json:"error,omitempty"`
	WorkerID                    string          `json:"worker_id,omitempty"`
	RegisteredTaskQueue         string          `json:"registered_task_queue,omitempty"`
	RequestedSessionQueue       string          `json:"requested_session_queue,omitempty"`
	MissingRequirements         []string        `json:"missing_requirements,omitempty"`
	MaxConcurrentWorkerSessions *int            `json:"max_concurrent_worker_sessions,omitempty"`
	MaxConcurrentActivities     *int            `json:"max_concurrent_activities,omitempty"`
}

// MarshalJSON writes workerSessionOperationResult.
func (r Result) MarshalJSON() ([]byte, error) {
	out := resultJSON{
		Admitted:                    r.Admitted,
		Outcome:                     r.Outcome,
		Session:                     r.Session,
		Status:                      r.Status,
		Error:                       r.Error,
		WorkerID:                    r.WorkerID,
		RegisteredTaskQueue:         r.RegisteredTaskQueue,
		RequestedSessionQueue:       r.RequestedSessionQueue,
		MissingRequirements:         r.MissingRequirements,
		MaxConcurrentWorkerSessions: r.MaxConcurrentWorkerSessions,
		MaxConcurrentActivities:     r.MaxConcurrentActivities,
	}
	if r.Reason != "" {
		out.Reason = &r.Reason
	}
	switch r.Outcome {
	case OutcomeCreated, OutcomeReused, OutcomeReacquired:
		out.ActivityTaskID = json.RawMessage("null")
		if r.ActivityTaskID != nil {
			out.ActivityTaskID = json.RawMessage(strconv.Quote(*r.ActivityTaskID))
		}
	}
	return json.Marshal(out)
}

// Holder is the registration of a session's lease owner as the snapshot
// shows it (workerSessionHolder). TaskQueue and Status are nil when the
// registration is gone (then IsStale is true).
type Holder struct {
	WorkerID        string
	TaskQueue       *string
	Status          *string
	LastHeartbeatAt *time.Time
	IsStale         bool
}

type holderJSON struct {
	WorkerID        string  `json:"worker_id"`
	TaskQueue       *string `json:"task_queue"`
	Status          *string `json:"status"`
	LastHeartbeatAt *string `json:"last_heartbeat_at"`
	IsStale         bool    `json:"is_stale"`
}

// MarshalJSON writes workerSessionHolder.
func (h Holder) MarshalJSON() ([]byte, error) {
	return json.Marshal(holderJSON{
		WorkerID: h.WorkerID, TaskQueue: h.TaskQueue, Status: h.Status,
		LastHeartbeatAt: timeString(h.LastHeartbeatAt), IsStale: h.IsStale,
	})
}

// Snapshot is one session as lifecycle results and operators see it
// (workerSessionSnapshot).
type Snapshot struct {
	SessionID                  string
	Namespace                  string
	Connection                 *string
	Queue                      *string
	Requirements               []string
	Status                     string
	LeaseOwner                 *string
	Holder                     *Holder
	LeaseExpiresAt             *time.Time
	TTLExpiresAt               *time.Time
	ClosedAt                   *time.Time
	FailureReason              *string
	LeaseSeconds               int
	TTLSeconds                 int
	MaxConcurrentActivities    int
	CreateIfMissing            bool
	AllowReacquireAfterFailure bool
	// ActiveActivityCount is the session's running attempts: processing
	// jobs reserved by the lease owner.
	ActiveActivityCount int
	LastHeartbeatAt     *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

type snapshotJSON struct {
	SessionID                  string   `json:"session_id"`
	Namespace                  string   `json:"namespace"`
	Connection                 *string  `json:"connection"`
	Queue                      *string  `json:"queue"`
	Requirements               []string `json:"requirements"`
	Status                     string   `json:"status"`
	LeaseOwner                 *string  `json:"lease_owner"`
	Holder                     *Holder  `json:"holder"`
	LeaseExpiresAt             *string  `json:"lease_expires_at"`
	TTLExpiresAt               *string  `json:"ttl_expires_at"`
	ClosedAt                   *string  `json:"closed_at"`
	FailureReason              *string  `json:"failure_reason"`
	LeaseSeconds               int      `json:"lease_seconds"`
	TTLSeconds                 int      `json:"ttl_seconds"`
	MaxConcurrentActivities    int      `json:"max_concurrent_activities"`
	CreateIfMissing            bool     `json:"create_if_missing"`
	AllowReacquireAfterFailure bool     `json:"allow_reacquire_after_failure"`
	ActiveActivityCount        int      `json:"active_activity_count"`
	LastHeartbeatAt            *string  `json:"last_heartbeat_at"`
	CreatedAt                  *string  `json:"created_at"`
	UpdatedAt                  *string  `json:"updated_at"`
}

// MarshalJSON writes workerSessionSnapshot with RFC 3339 UTC times
// ("2026-11-30T05:00:00Z") or null.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	reqs := s.Requirements
	if reqs == nil {
		reqs = []string{}
	}
	return json.Marshal(snapshotJSON{
		SessionID: s.SessionID, Namespace: s.Namespace, Connection: s.Connection, Queue: s.Queue,
		Requirements: reqs, Status: s.Status, LeaseOwner: s.LeaseOwner, Holder: s.Holder,
		LeaseExpiresAt: timeString(s.LeaseExpiresAt), TTLExpiresAt: timeString(s.TTLExpiresAt),
		ClosedAt: timeString(s.ClosedAt), FailureReason: s.FailureReason,
		LeaseSeconds: s.LeaseSeconds, TTLSeconds: s.TTLSeconds,
		MaxConcurrentActivities: s.MaxConcurrentActivities, CreateIfMissing: s.CreateIfMissing,
		AllowReacquireAfterFailure: s.AllowReacquireAfterFailure,
		ActiveActivityCount:        s.ActiveActivityCount,
		LastHeartbeatAt:            timeString(s.LastHeartbeatAt),
		CreatedAt:                  timeString(&s.CreatedAt), UpdatedAt: timeString(&s.UpdatedAt),
	})
}

// Affinity is the workerSessionTaskAffinity a leased session-bound task
// carries: the session's options plus its status, owner and expiries.
func (s Snapshot) Affinity() map[string]any {
	m := map[string]any{
		"session_id":                    s.SessionID,
		"requirements":                  nonNil(s.Requirements),
		"lease_seconds":                 s.LeaseSeconds,
		"ttl_seconds":                   s.TTLSeconds,
		"max_concurrent_activities":     s.MaxConcurrentActivities,
		"create_if_missing":             s.CreateIfMissing,
		"allow_reacquire_after_failure": s.AllowReacquireAfterFailure,
		"status":                        s.Status,
	}
	// The server drops nulls from the affinity.
	if s.Connection != nil {
		m["connection"] = *s.Connection
	}
	if s.Queue != nil {
		m["queue"] = *s.Queue
	}
	if s.LeaseOwner != nil {
		m["lease_owner"] = *s.LeaseOwner
	}
	if v := timeString(s.LeaseExpiresAt); v != nil {
		m["lease_expires_at"] = *v
	}
	if v := timeString(s.TTLExpiresAt); v != nil {
		m["ttl_expires_at"] = *v
	}
	return m
}

// Metrics counts a namespace's sessions by status (workerSessionMetrics).
type Metrics struct {
	Total    int `json:"total"`
	Active   int `json:"active"`
	Closed   int `json:"closed"`
	Expired  int `json:"expired"`
	Failed   int `json:"failed"`
	Orphaned int `json:"orphaned"`
}

func (m *Metrics) add(status string, n int) {
	m.Total += n
	switch status {
	case StatusActive:
		m.Active += n
	case StatusClosed:
		m.Closed += n
	case StatusExpired:
		m.Expired += n
	case StatusFailed:
		m.Failed += n
	case StatusOrphaned:
		m.Orphaned += n
	}
}

// Visibility is the operator list (workerSessionVisibility).
type Visibility struct {
	Namespace string     `json:"namespace"`
	Metrics   Metrics    `json:"metrics"`
	Sessions  []Snapshot `json:"sessions"`
}

// MarshalJSON writes an empty list as [], never null.
func (v Visibility) MarshalJSON() ([]byte, error) {
	type plain Visibility
	p := plain(v)
	if p.Sessions == nil {
		p.Sessions = []Snapshot{}
	}
	return json.Marshal(p)
}

func timeString(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
