package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Worker registration defaults (spec §2.1).
const (
	DefaultHeartbeatIntervalSeconds = 10
	DefaultRuntime                  = "go"
)

// Runtimes are the runtime values a registration may name.
var Runtimes = []string{"php", "python", "rust", "typescript", "go", "java", "external"}

// Registration is what a worker registers (table workers). Namespace ""
// means "default"; an empty WorkerID gets a ULID.
type Registration struct {
	Namespace string
	WorkerID  string
	// TaskQueue is the registered queue (durable-workflow has exactly one);
	// Queues lists every queue the worker serves, TaskQueue first, because
	// our Go workers serve several. An empty TaskQueue takes Queues[0].
	TaskQueue  string
	Queues     []string
	Runtime    string // "" → "go"
	SDKVersion string
	BuildID    string
	// Capabilities are matched against session requirements (exact string
	// after trimming); trimmed, empties dropped, de-duplicated.
	Capabilities []string
	// MaxConcurrentWorkerSessions: nil → 10; 0 holds no sessions at all.
	MaxConcurrentWorkerSessions *int
	HeartbeatIntervalSeconds    int // 0 → 10; else 1..3600
	// TaskSlots and ProcessMetrics are raw JSON objects, or nil.
	TaskSlots, ProcessMetrics []byte
}

// Worker is a stored registration as operators see it.
type Worker struct {
	Registration
	Status          string
	LastHeartbeatAt *time.Time
	RegisteredAt    time.Time
	// IsStale: no heartbeat within the registry's StaleAfter.
	IsStale bool
}

// Register upserts a registration keyed by (namespace, worker id): the
// heartbeat is now and the status active.
func (r *Registry) Register(ctx context.Context, reg Registration) (Worker, error) {
	row, err := r.registrationRow(reg)
	if err != nil {
		return Worker{}, err
	}
	now := r.now()
	row.LastHeartbeatAt = sql.NullTime{Time: now, Valid: true}
	row.RegisteredAt, row.UpdatedAt = now, now
	if err := r.st.Sessions().UpsertWorker(ctx, row); err != nil {
		return Worker{}, fmt.Errorf("register worker %s: %w", row.WorkerID, err)
	}
	r.log.Info("worker registered", "namespace", row.Namespace, "worker_id", row.WorkerID,
		"queues", []string(row.Queues), "capabilities", []string(row.Capabilities))
	return r.Worker(ctx, row.Namespace, row.WorkerID)
}

func (r *Registry) registrationRow(reg Registration) (store.WorkerRow, error) {
	ns, err := namespaceOf(reg.Namespace)
	if err != nil {
		return store.WorkerRow{}, fmt.Errorf("%w: %w", ErrInvalidRegistration, err)
	}
	id := reg.WorkerID
	if id == "" {
		id = ulid.Make().String()
	}
	if err := ValidateWorkerID(id); err != nil {
		return store.WorkerRow{}, err
	}
	queues := cleanStrings(append([]string{reg.TaskQueue}, reg.Queues...))
	if len(queues) == 0 {
		return store.WorkerRow{}, fmt.Errorf("%w: worker %s names no task queue; set TaskQueue (or Queues)", ErrInvalidRegistration, id)
	}
	// Queue names follow the jobs.queue rules (store.CheckName): a
	// longer one could never match a job, and one with control bytes
	// would reach logs, terminals and the dashboard (N18).
	for _, q := range queues {
		if err := store.CheckName(store.QueueName, q); err != nil {
			return store.WorkerRow{}, fmt.Errorf("%w: %w", ErrInvalidRegistration, err)
		}
	}
	caps := cleanStrings(reg.Capabilities)
	for _, c := range caps {
		if utf8.RuneCountInString(c) > 255 {
			return store.WorkerRow{}, fmt.Errorf("%w: capability %q is longer than 255 characters", ErrInvalidRegistration, c)
		}
	}
	if err := CheckCapabilities(caps); err != nil {
		return store.WorkerRow{}, err
	}
	runtime := strings.TrimSpace(reg.Runtime)
	if runtime == "" {
		runtime = DefaultRuntime
	}
	if !slices.Contains(Runtimes, runtime) {
		return store.WorkerRow{}, fmt.Errorf("%w: runtime %q is not one of %s", ErrInvalidRegistration, runtime, strings.Join(Runtimes, ", "))
	}
	maxSessions := DefaultMaxWorkerSessions
	if reg.MaxConcurrentWorkerSessions != nil {
		maxSessions = *reg.MaxConcurrentWorkerSessions
	}
	if maxSessions < 0 {
		return store.WorkerRow{}, fmt.Errorf("%w: max_concurrent_worker_sessions is %d; use 0 (no sessions) or more", ErrInvalidRegistration, maxSessions)
	}
	interval := reg.HeartbeatIntervalSeconds
	if interval == 0 {
		interval = DefaultHeartbeatIntervalSeconds
	}
	if interval < 1 || interval > 3600 {
		return store.WorkerRow{}, fmt.Errorf("%w: heartbeat_interval_seconds is %d; use 1 to 3600", ErrInvalidRegistration, interval)
	}
	slots, err := storedJSON("task_slots", reg.TaskSlots)
	if err != nil {
		return store.WorkerRow{}, err
	}
	metrics, err := storedJSON("process_metrics", reg.ProcessMetrics)
	if err != nil {
		return store.WorkerRow{}, err
	}
	return store.WorkerRow{
		Namespace:                   ns,
		WorkerID:                    id,
		TaskQueue:                   queues[0],
		Queues:                      queues,
		Runtime:                     runtime,
		SDKVersion:                  nullString(reg.SDKVersion),
		BuildID:                     nullString(reg.BuildID),
		Capabilities:                caps,
		MaxConcurrentWorkerSessions: sql.NullInt64{Int64: int64(maxSessions), Valid: true},
		HeartbeatIntervalSeconds:    interval,
		TaskSlots:                   slots,
		ProcessMetrics:              metrics,
	}, nil
}

// Heartbeat records a registration heartbeat; non-nil taskSlots and
// processMetrics (JSON objects) replace the stored ones.
func (r *Registry) Heartbeat(ctx context.Context, ns, workerID string, taskSlots, processMetrics []byte) (Worker, error) {
	b, err := r.Beat(ns, workerID, taskSlots, processMetrics)
	if err != nil {
		return Worker{}, err
	}
	if err := r.st.Sessions().HeartbeatWorker(ctx, b.Namespace, workerID, b.At, b.TaskSlots, b.ProcessMetrics); err != nil {
		return Worker{}, fmt.Errorf("heartbeat of worker %s: %w", workerID, err)
	}
	return r.Worker(ctx, ns, workerID)
}

// Beat is what Heartbeat writes for a worker, checked as Heartbeat checks
// it, for a caller that writes the heartbeats of many sites' workers in
// one statement (store.HeartbeatWorkersAcross; its Store is left to it).
func (r *Registry) Beat(ns, workerID string, taskSlots, processMetrics []byte) (store.WorkerBeat, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return store.WorkerBeat{}, err
	}
	if err := ValidateWorkerID(workerID); err != nil {
		return store.WorkerBeat{}, err
	}
	slots, err := storedJSON("task_slots", taskSlots)
	if err != nil {
		return store.WorkerBeat{}, err
	}
	metrics, err := storedJSON("process_metrics", processMetrics)
	if err != nil {
		return store.WorkerBeat{}, err
	}
	return store.WorkerBeat{Namespace: ns, WorkerID: workerID, At: r.now(), TaskSlots: slots, ProcessMetrics: metrics}, nil
}

// Deregister deletes a registration (graceful shutdown). The sessions it
// held turn orphaned on their next refresh, so another worker can reacquire
// them; close them first (CloseHeldBy) to end them instead.
func (r *Registry) Deregister(ctx context.Context, ns, workerID string) error {
	ns, err := namespaceOf(ns)
	if err != nil {
		return err
	}
	if err := ValidateWorkerID(workerID); err != nil {
		return err
	}
	found, err := r.st.Sessions().DeleteWorker(ctx, ns, workerID)
	if err != nil {
		return fmt.Errorf("deregister worker %s: %w", workerID, err)
	}
	if !found {
		return fmt.Errorf("%w: worker %q in namespace %q", ErrWorkerNotRegistered, workerID, ns)
	}
	r.log.Info("worker deregistered", "namespace", ns, "worker_id", workerID)
	return nil
}

// Workers lists a namespace's registrations by worker id.
func (r *Registry) Workers(ctx context.Context, ns string) ([]Worker, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return nil, err
	}
	rows, err := r.st.Sessions().ListWorkers(ctx, ns)
	if err != nil {
		return nil, err
	}
	now := r.now()
	out := make([]Worker, len(rows))
	for i, row := range rows {
		out[i] = r.workerOf(row, now)
	}
	return out, nil
}

// Worker reads one registration; ErrWorkerNotRegistered when there is none.
func (r *Registry) Worker(ctx context.Context, ns, workerID string) (Worker, error) {
	ns, err := namespaceOf(ns)
	if err != nil {
		return Worker{}, err
	}
	row, err := r.st.Sessions().GetWorker(ctx, ns, workerID)
	if err != nil {
		return Worker{}, err
	}
	if row == nil {
		return Worker{}, fmt.Errorf("%w: worker %q in namespace %q", ErrWorkerNotRegistered, workerID, ns)
	}
	return r.workerOf(*row, r.now()), nil
}

func (r *Registry) workerOf(row store.WorkerRow, now time.Time) Worker {
	w := Worker{
		Registration: Registration{
			Namespace:                row.Namespace,
			WorkerID:                 row.WorkerID,
			TaskQueue:                row.TaskQueue,
			Queues:                   slices.Clone([]string(row.Queues)),
			Runtime:                  row.Runtime,
			SDKVersion:               row.SDKVersion.String,
			BuildID:                  row.BuildID.String,
			Capabilities:             slices.Clone([]string(row.Capabilities)),
			HeartbeatIntervalSeconds: row.HeartbeatIntervalSeconds,
		},
		Status:       row.Status,
		RegisteredAt: row.RegisteredAt.UTC(),
	}
	if row.MaxConcurrentWorkerSessions.Valid {
		n := int(row.MaxConcurrentWorkerSessions.Int64)
		w.MaxConcurrentWorkerSessions = &n
	}
	if row.TaskSlots.Valid {
		w.TaskSlots = []byte(row.TaskSlots.String)
	}
	if row.ProcessMetrics.Valid {
		w.ProcessMetrics = []byte(row.ProcessMetrics.String)
	}
	w.LastHeartbeatAt = timePtr(row.LastHeartbeatAt)
	w.IsStale = r.isStale(w.LastHeartbeatAt, now)
	return w
}

// workerQueues is every queue a registration serves (task_queue first; a
// row written without the list still serves its task_queue).
func workerQueues(w *store.WorkerRow) []string {
	if len(w.Queues) == 0 {
		return []string{w.TaskQueue}
	}
	return w.Queues
}

// cleanStrings trims, drops empties and de-duplicates keeping the first
// occurrence (how the server stores capabilities).
func cleanStrings(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// storedJSON re-encodes a worker-supplied JSON value with phpjson, as every
// stored JSON is; nil stays NULL.
func storedJSON(field string, raw []byte) (sql.NullString, error) {
	if raw == nil {
		return sql.NullString{}, nil
	}
	v, err := phpjson.Decode(raw)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("%w: %s is not valid JSON: %w", ErrInvalidRegistration, field, err)
	}
	if _, ok := v.AsObject(); !ok && !v.IsEmptyArray() {
		return sql.NullString{}, fmt.Errorf("%w: %s must be a JSON object", ErrInvalidRegistration, field)
	}
	b, err := phpjson.Encode(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("%w: %s: %w", ErrInvalidRegistration, field, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

// MarshalJSON writes the operator's view of a registration (`queuety worker
// list --json`; durable-workflow's GET /api/workers fields).
func (w Worker) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		WorkerID                    string   `json:"worker_id"`
		Namespace                   string   `json:"namespace"`
		TaskQueue                   string   `json:"task_queue"`
		Queues                      []string `json:"queues"`
		Runtime                     string   `json:"runtime"`
		SDKVersion                  string   `json:"sdk_version,omitempty"`
		BuildID                     string   `json:"build_id,omitempty"`
		Capabilities                []string `json:"capabilities"`
		MaxConcurrentWorkerSessions *int     `json:"max_concurrent_worker_sessions"`
		HeartbeatIntervalSeconds    int      `json:"heartbeat_interval_seconds"`
		Status                      string   `json:"status"`
		LastHeartbeatAt             *string  `json:"last_heartbeat_at"`
		RegisteredAt                *string  `json:"registered_at"`
		IsStale                     bool     `json:"is_stale"`
	}{
		WorkerID: w.WorkerID, Namespace: w.Namespace, TaskQueue: w.TaskQueue, Queues: nonNil(w.Queues),
		Runtime: w.Runtime, SDKVersion: w.SDKVersion, BuildID: w.BuildID, Capabilities: nonNil(w.Capabilities),
		MaxConcurrentWorkerSessions: w.MaxConcurrentWorkerSessions, HeartbeatIntervalSeconds: w.HeartbeatIntervalSeconds,
		Status: w.Status, LastHeartbeatAt: timeString(w.LastHeartbeatAt), RegisteredAt: timeString(&w.RegisteredAt),
		IsStale: w.IsStale,
	})
}
