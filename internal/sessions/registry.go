package sessions

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
)

// DefaultNamespace is the namespace of a request that names none.
const DefaultNamespace = "default"

// DefaultStaleAfter is how old a registration heartbeat may be before the
// sessions its worker holds turn orphaned (spec ⚠5: 60 s).
const DefaultStaleAfter = 60 * time.Second

// MaxWorkerIDLength is the longest worker id: a session's jobs carry their
// holder in jobs.reserved_by, a VARCHAR(64).
const MaxWorkerIDLength = 64

// Session statuses (workerSessionStatus).
const (
	StatusActive   = "active"
	StatusClosed   = "closed"
	StatusExpired  = "expired"
	StatusFailed   = "failed" // reserved by the contract; nothing sets it
	StatusOrphaned = "orphaned"
)

// Failure reasons (workerSessionFailureReason).
const (
	FailureTTLExpired           = "ttl_expired"
	FailureLeaseExpired         = "lease_expired"
	FailureWorkerHeartbeatStale = "worker_heartbeat_stale"
)

// Outcomes of an admitted operation (workerSessionOperationResult.outcome).
const (
	OutcomeCreated           = "created"
	OutcomeReused            = "reused"
	OutcomeReacquired        = "reacquired"
	OutcomeHeartbeatRecorded = "heartbeat_recorded"
	OutcomeAlreadyClosed     = "already_closed"
	OutcomeClosed            = "closed"
)

// Refusal reasons (workerSessionOperationResult.reason); HTTPStatus maps
// each to the status the server answers with.
const (
	ReasonInvalidWorkerSession       = "invalid_worker_session"
	ReasonWorkerNotRegistered        = "worker_not_registered"
	ReasonSessionQueueMismatch       = "session_queue_mismatch"
	ReasonSessionNotFound            = "session_not_found"
	ReasonSessionNotActive           = "session_not_active"
	ReasonSessionOwnerMismatch       = "session_owner_mismatch"
	ReasonSessionMissing             = "session_missing"
	ReasonRequirementsNotMet         = "session_requirements_not_met"
	ReasonWorkerSessionLimitExceeded = "worker_session_limit_exceeded"
	ReasonOwnedByAnotherWorker       = "session_owned_by_another_worker"
	ReasonActivityLimitExceeded      = "session_activity_limit_exceeded"
	ReasonSessionClosed              = "session_closed"
	ReasonReacquireDisallowed        = "session_reacquire_disallowed"
)

// Reasons lists the 13 refusal reasons in the schema's order.
var Reasons = []string{
	ReasonInvalidWorkerSession, ReasonWorkerNotRegistered, ReasonSessionQueueMismatch,
	ReasonSessionNotFound, ReasonSessionNotActive, ReasonSessionOwnerMismatch,
	ReasonSessionMissing, ReasonRequirementsNotMet, ReasonWorkerSessionLimitExceeded,
	ReasonOwnedByAnotherWorker, ReasonActivityLimitExceeded, ReasonSessionClosed,
	ReasonReacquireDisallowed,
}

// HTTPStatus is the status the worker plane answers a refusal with (spec
// §1.12): 422, 412, 404, else 409. An empty reason (admitted) gives 200;
// a created session's 201 is in Result.Status.
func HTTPStatus(reason string) int {
	switch reason {
	case "":
		return http.StatusOK
	case ReasonInvalidWorkerSession:
		return http.StatusUnprocessableEntity
	case ReasonWorkerNotRegistered:
		return http.StatusPreconditionFailed
	case ReasonSessionNotFound:
		return http.StatusNotFound
	default:
		return http.StatusConflict
	}
}

var (
	// ErrWorkerNotRegistered: the worker has no registration in the
	// namespace; it must register (POST /api/worker/register) first.
	ErrWorkerNotRegistered = errors.New("worker is not registered in this namespace; register it first")
	// ErrSessionNotFound: no session with that id in the namespace.
	ErrSessionNotFound = errors.New("worker session not found")
	// ErrInvalidWorkerID: a worker id must be 1 to 64 characters.
	ErrInvalidWorkerID = errors.New("invalid worker id")
	// ErrInvalidRegistration: a registration field is out of range.
	ErrInvalidRegistration = errors.New("invalid worker registration")
)

// ValidateWorkerID checks that a worker id fits where it is stored: 1 to
// 64 characters, because jobs.reserved_by holds the holder of a session's
// jobs.
func ValidateWorkerID(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: it is empty; give every worker a stable, non-blank id", ErrInvalidWorkerID)
	}
	if n := utf8.RuneCountInString(id); n > MaxWorkerIDLength {
		return fmt.Errorf("%w: %q is %d characters; use at most %d (jobs.reserved_by is VARCHAR(%d))",
			ErrInvalidWorkerID, id, n, MaxWorkerIDLength, MaxWorkerIDLength)
	}
	// A NUL or another control byte would be stored and printed back to
	// operators' terminals; no real worker id has one.
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%w: %q has a control character at byte %d; use printable characters only", ErrInvalidWorkerID, id, i)
	}
	return nil
}

// MaxCapabilitiesBytes bounds a registration's capabilities as stored
// (a JSON list in a TEXT column of 65,535 bytes), so a long list is a
// validation error, not a failed write.
const MaxCapabilitiesBytes = 32 << 10

// CheckCapabilities refuses a capability list whose stored form would be
// larger than MaxCapabilitiesBytes.
func CheckCapabilities(caps []string) error {
	v, err := store.StringList(caps).Value()
	if err != nil {
		return fmt.Errorf("%w: capabilities: %v", ErrInvalidRegistration, err)
	}
	if n := len(v.(string)); n > MaxCapabilitiesBytes {
		return fmt.Errorf("%w: capabilities take %d bytes stored; at most %d", ErrInvalidRegistration, n, MaxCapabilitiesBytes)
	}
	return nil
}

// Config configures a Registry.
type Config struct {
	// StaleAfter is the registration heartbeat age after which a worker is
	// stale and its sessions orphaned; 0 means DefaultStaleAfter.
	StaleAfter time.Duration
	Logger     *slog.Logger
	// Clock supplies every time the registry writes or compares; nil means
	// the store's clock.
	Clock clock.Clock
}

// Registry keeps worker registrations and worker-session leases. It holds
// no state of its own: every decision is made on rows locked in MariaDB, so
// any number of processes can share the tables.
type Registry struct {
	st         *store.Store
	staleAfter time.Duration
	log        *slog.Logger
	clk        clock.Clock
}

// storeClock reads the store's clock, so tests that move it move both.
type storeClock struct{ st *store.Store }

func (c storeClock) Now() time.Time { return c.st.Now() }

// NewTicker ticks on the wall clock: the registry runs no loop of its own.
func (c storeClock) NewTicker(d time.Duration) clock.Ticker { return clock.Real{}.NewTicker(d) }

// New builds a Registry on st.
func New(st *store.Store, cfg Config) *Registry {
	r := &Registry{st: st, staleAfter: cfg.StaleAfter, log: cfg.Logger, clk: cfg.Clock}
	if r.staleAfter <= 0 {
		r.staleAfter = DefaultStaleAfter
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.clk == nil {
		r.clk = storeClock{st}
	}
	return r
}

// StaleAfter is the staleness threshold in use (advertised to workers as
// stale_after_seconds).
func (r *Registry) StaleAfter() time.Duration { return r.staleAfter }

// now is the clock truncated to what a DATETIME column keeps, so a value
// compared in Go equals the one stored.
func (r *Registry) now() time.Time { return r.clk.Now().UTC().Truncate(time.Second) }

// namespaceOf maps "" to the default namespace and checks the column width.
func namespaceOf(ns string) (string, error) {
	ns = strings.TrimSpace(ns)
	if ns == "" {
		return DefaultNamespace, nil
	}
	if utf8.RuneCountInString(ns) > 128 {
		return "", fmt.Errorf("namespace %q is longer than 128 characters", ns)
	}
	return ns, nil
}

// isStale applies §2.3: no heartbeat, or one older than the threshold.
func (r *Registry) isStale(last *time.Time, now time.Time) bool {
	return last == nil || last.Before(now.Add(-r.staleAfter))
}
