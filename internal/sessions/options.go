// Package sessions implements durable-workflow's worker sessions over
// queuety-go's own tables: worker registrations, session leases and the
// admission that pins session-bound jobs to one capable worker.
package sessions

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Defaults of the worker_session options (spec §1.2).
const (
	DefaultLeaseSeconds            = 120
	DefaultTTLSeconds              = 1800
	DefaultMaxConcurrentActivities = 1
	DefaultMaxWorkerSessions       = 10
)

// MaxOptionInt bounds lease_seconds, ttl_seconds and
// max_concurrent_activities: their worker_sessions columns are INT
// UNSIGNED, and a larger value would fail every write of the session row
// (and with it every claim window that admits the job).
const MaxOptionInt = 2147483647

// tooLarge is the message suffix of an integer option above MaxOptionInt.
const tooLarge = "must be a positive integer of at most 2147483647"

// Options is a worker_session object as authors write it: nil means "not
// set" (the snapshot writes null and readers apply the defaults).
type Options struct {
	SessionID                  string
	Connection                 *string
	Queue                      *string
	Requirements               []string
	LeaseSeconds               *int
	TTLSeconds                 *int
	MaxConcurrentActivities    *int
	CreateIfMissing            *bool
	AllowReacquireAfterFailure *bool
}

// Normalized is a worker_session with every default applied: the form the
// claim-side admission works with and jobs.worker_session stores.
// Connection and Queue stay nil when unset because their default is the
// job's own routing, not a constant.
type Normalized struct {
	SessionID                  string
	Connection, Queue          *string
	Requirements               []string
	LeaseSeconds               int
	TTLSeconds                 int
	MaxConcurrentActivities    int
	CreateIfMissing            bool
	AllowReacquireAfterFailure bool
}

// snapshotKeys is the key order of the library's
// WorkerSessionOptions::toSnapshot; stored bytes depend on it.
var snapshotKeys = [...]string{
	"session_id", "connection", "queue", "requirements", "lease_seconds",
	"ttl_seconds", "max_concurrent_activities", "create_if_missing",
	"allow_reacquire_after_failure",
}

// Validate applies the authoring rules of the library's WorkerSessionOptions
// (spec §1.3) in the order its constructor checks them and returns the first
// violation with the library's message, so Go and PHP authors see the same
// text.
func (o Options) Validate() error {
	if phpjson.Trim(o.SessionID) == "" {
		return errors.New("Worker session session id must be a non-empty string.")
	}
	if o.Connection != nil && phpjson.Trim(*o.Connection) == "" {
		return errors.New("Worker session connection must be a non-empty string.")
	}
	if o.Queue != nil && phpjson.Trim(*o.Queue) == "" {
		return errors.New("Worker session queue must be a non-empty string.")
	}
	for i, r := range o.Requirements {
		if phpjson.Trim(r) == "" {
			return fmt.Errorf("Worker session requirement at index %d must be a non-empty string.", i)
		}
	}
	for _, f := range []struct {
		name string
		v    *int
	}{
		{"leaseSeconds", o.LeaseSeconds},
		{"ttlSeconds", o.TTLSeconds},
		{"maxConcurrentActivities", o.MaxConcurrentActivities},
	} {
		if f.v != nil && *f.v < 1 {
			return fmt.Errorf("Worker session %s must be a positive integer.", f.name)
		}
		if f.v != nil && *f.v > MaxOptionInt {
			return fmt.Errorf("Worker session %s %s.", f.name, tooLarge)
		}
	}
	return nil
}

// Normalize fills the defaults, trims the ids and trims and de-duplicates
// the requirements keeping their first order. Like the server's
// normalization of stored snapshots it is lenient: a value Validate would
// reject (blank string, int < 1 or > MaxOptionInt, blank requirement)
// falls back to its default or is dropped, so callers validate first when
// they want errors.
func (o Options) Normalize() Normalized {
	return Normalized{
		SessionID:                  phpjson.Trim(o.SessionID),
		Connection:                 trimmedOrNil(o.Connection),
		Queue:                      trimmedOrNil(o.Queue),
		Requirements:               normalizeRequirements(o.Requirements),
		LeaseSeconds:               positiveOr(o.LeaseSeconds, DefaultLeaseSeconds),
		TTLSeconds:                 positiveOr(o.TTLSeconds, DefaultTTLSeconds),
		MaxConcurrentActivities:    positiveOr(o.MaxConcurrentActivities, DefaultMaxConcurrentActivities),
		CreateIfMissing:            o.CreateIfMissing == nil || *o.CreateIfMissing,
		AllowReacquireAfterFailure: o.AllowReacquireAfterFailure == nil || *o.AllowReacquireAfterFailure,
	}
}

// Snapshot is the library's toSnapshot: the nine keys in its order, ids
// trimmed, requirements trimmed and de-duplicated, and null for an unset
// connection, queue or integer. The two booleans are never null: the
// library types them bool with default true, and the Go builder and PHP
// bridge must write the same bytes. Call Validate first; Snapshot does not
// reject anything.
func (o Options) Snapshot() phpjson.Value {
	obj := phpjson.NewObject()
	obj.Set(snapshotKeys[0], phpjson.String(phpjson.Trim(o.SessionID)))
	obj.Set(snapshotKeys[1], optionalString(trimmedOrNil(o.Connection)))
	obj.Set(snapshotKeys[2], optionalString(trimmedOrNil(o.Queue)))
	obj.Set(snapshotKeys[3], phpjson.Strings(normalizeRequirements(o.Requirements)))
	obj.Set(snapshotKeys[4], optionalInt(o.LeaseSeconds))
	obj.Set(snapshotKeys[5], optionalInt(o.TTLSeconds))
	obj.Set(snapshotKeys[6], optionalInt(o.MaxConcurrentActivities))
	obj.Set(snapshotKeys[7], phpjson.Bool(o.CreateIfMissing == nil || *o.CreateIfMissing))
	obj.Set(snapshotKeys[8], phpjson.Bool(o.AllowReacquireAfterFailure == nil || *o.AllowReacquireAfterFailure))
	return phpjson.ObjectValue(obj)
}

// Snapshot writes the nine keys with the defaults applied; this is what
// jobs.worker_session stores, so the claim side never re-derives defaults.
func (n Normalized) Snapshot() phpjson.Value {
	reqs := n.Requirements
	obj := phpjson.NewObject()
	obj.Set(snapshotKeys[0], phpjson.String(n.SessionID))
	obj.Set(snapshotKeys[1], optionalString(n.Connection))
	obj.Set(snapshotKeys[2], optionalString(n.Queue))
	obj.Set(snapshotKeys[3], phpjson.Strings(reqs))
	obj.Set(snapshotKeys[4], phpjson.Int(int64(n.LeaseSeconds)))
	obj.Set(snapshotKeys[5], phpjson.Int(int64(n.TTLSeconds)))
	obj.Set(snapshotKeys[6], phpjson.Int(int64(n.MaxConcurrentActivities)))
	obj.Set(snapshotKeys[7], phpjson.Bool(n.CreateIfMissing))
	obj.Set(snapshotKeys[8], phpjson.Bool(n.AllowReacquireAfterFailure))
	return phpjson.ObjectValue(obj)
}

// FieldError is one rejected worker_session field. Field is relative to the
// worker_session object ("" for the object itself, "session_id",
// "requirements.2"), so an HTTP layer can prefix it with its own path such
// as "commands.0.worker_session".
type FieldError struct {
	Field   string
	Message string
}

// ValidationError lists every rejected field of one worker_session object
// in the order the library's WorkflowCommandNormalizer reports them.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		if fe.Field == "" {
			msgs[i] = fe.Message
		} else {
			msgs[i] = "worker_session." + fe.Field + ": " + fe.Message
		}
	}
	return strings.Join(msgs, " ")
}

// ParseOptions reads a decoded worker_session object (a step definition, a
// jobs column, a CLI or HTTP body) with the rules of the library's
// WorkflowCommandNormalizer (spec §1.3): strict types (an int field must be
// a JSON int, a bool field a JSON bool), explicit null means "not
// provided", and every bad field is reported, not only the first. The error
// is a *ValidationError. A null v is a caller bug here (the caller decides
// whether the object is present) and is reported as not an object.
func ParseOptions(v phpjson.Value) (Options, error) {
	obj, id, err := sessionObject(v)
	if err != nil {
		return Options{}, err
	}
	o := Options{SessionID: id}

	var errs []FieldError
	for _, f := range []struct {
		name string
		dst  **string
	}{{"connection", &o.Connection}, {"queue", &o.Queue}} {
		fv, present := obj.Get(f.name)
		if !present || fv.IsNull() {
			continue
		}
		s, ok := fv.AsString()
		if !ok || phpjson.Trim(s) == "" {
			errs = append(errs, FieldError{f.name, "Worker session field [" + f.name + "] must be a non-empty string when provided."})
			continue
		}
		s = phpjson.Trim(s)
		*f.dst = &s
	}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"lease_seconds", &o.LeaseSeconds}, {"ttl_seconds", &o.TTLSeconds}, {"max_concurrent_activities", &o.MaxConcurrentActivities}} {
		fv, present := obj.Get(f.name)
		if !present || fv.IsNull() {
			continue
		}
		// IsInt, not AsInt64: PHP's is_int rejects 1.0 and "1".
		n, _ := fv.AsInt64()
		if !fv.IsInt() || n < 1 {
			errs = append(errs, FieldError{f.name, "Worker session field [" + f.name + "] must be a positive integer when provided."})
			continue
		}
		if n > MaxOptionInt {
			errs = append(errs, FieldError{f.name, "Worker session field [" + f.name + "] " + tooLarge + " when provided."})
			continue
		}
		i := int(n)
		*f.dst = &i
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"create_if_missing", &o.CreateIfMissing}, {"allow_reacquire_after_failure", &o.AllowReacquireAfterFailure}} {
		fv, present := obj.Get(f.name)
		if !present || fv.IsNull() {
			continue
		}
		b, ok := fv.AsBool()
		if !ok {
			errs = append(errs, FieldError{f.name, "Worker session field [" + f.name + "] must be boolean when provided."})
			continue
		}
		*f.dst = &b
	}
	if rv, present := obj.Get("requirements"); present && !rv.IsNull() {
		entries, ok := phpjson.Values(rv), phpjson.IsArray(rv)
		if !ok {
			errs = append(errs, FieldError{"requirements", "Worker session requirements must be a list of non-empty strings."})
		} else {
			var reqs []string
			for pos, e := range entries {
				s, ok := e.AsString()
				if !ok || phpjson.Trim(s) == "" {
					errs = append(errs, FieldError{"requirements." + strconv.Itoa(pos), "Worker session requirements must be non-empty strings."})
					continue
				}
				reqs = append(reqs, s)
			}
			o.Requirements = normalizeRequirements(reqs)
		}
	}
	if errs != nil {
		return Options{}, &ValidationError{Errors: errs}
	}
	return o, nil
}

// sessionObject checks what both parsers refuse: a value that is not a PHP
// array, and a missing or blank session_id. It returns the object and the
// trimmed id.
func sessionObject(v phpjson.Value) (*phpjson.Object, string, error) {
	if k := v.Kind(); k != phpjson.KindObject && k != phpjson.KindList {
		return nil, "", &ValidationError{Errors: []FieldError{{
			Message: "Workflow task command field [worker_session] must be an object when provided.",
		}}}
	}
	// A JSON list is a PHP array too: it passes is_array and then lacks a
	// session_id, which is the error PHP reports for it.
	obj, isObj := v.AsObject()
	if !isObj {
		obj = phpjson.NewObject()
	}
	id, _ := obj.Get("session_id")
	s, ok := id.AsString()
	if !ok || phpjson.Trim(s) == "" {
		return nil, "", &ValidationError{Errors: []FieldError{{
			Field: "session_id", Message: "Worker session commands require a non-empty session_id.",
		}}}
	}
	return obj, phpjson.Trim(s), nil
}

// ParseStored reads a worker_session snapshot that is already stored
// (jobs.worker_session, an execution's activity options) the way the
// server normalizes stored snapshots (spec §1.3, last paragraph): leniently,
// because refusing a row that was accepted once would strand its job.
//   - lease_seconds, ttl_seconds, max_concurrent_activities: a JSON int or a
//     string of ASCII digits in 1..MaxOptionInt is kept; anything else
//     (0, negative, too large, float, bool, other strings) is nil, the
//     default;
//   - create_if_missing, allow_reacquire_after_failure: a bool, 0/1 or
//     "0"/"1" (Laravel's boolean set) is kept; anything else is nil (true);
//   - connection, queue: a non-blank string is kept trimmed, else nil;
//   - requirements: the non-blank strings of a PHP array, trimmed and
//     de-duplicated; anything else is none.
//
// Only what has no default is an error (a *ValidationError, as from
// ParseOptions): a value that is not a PHP array, or a missing, non-string
// or blank session_id.
func ParseStored(v phpjson.Value) (Options, error) {
	obj, id, err := sessionObject(v)
	if err != nil {
		return Options{}, err
	}
	o := Options{SessionID: id}
	for _, f := range []struct {
		name string
		dst  **string
	}{{"connection", &o.Connection}, {"queue", &o.Queue}} {
		fv, _ := obj.Get(f.name)
		if s, ok := fv.AsString(); ok {
			*f.dst = trimmedOrNil(&s)
		}
	}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"lease_seconds", &o.LeaseSeconds}, {"ttl_seconds", &o.TTLSeconds}, {"max_concurrent_activities", &o.MaxConcurrentActivities}} {
		fv, _ := obj.Get(f.name)
		if n, ok := storedInt(fv); ok {
			*f.dst = &n
		}
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"create_if_missing", &o.CreateIfMissing}, {"allow_reacquire_after_failure", &o.AllowReacquireAfterFailure}} {
		fv, _ := obj.Get(f.name)
		if b, ok := storedBool(fv); ok {
			*f.dst = &b
		}
	}
	if rv, _ := obj.Get("requirements"); !rv.IsNull() {
		if entries, ok := phpjson.Values(rv), phpjson.IsArray(rv); ok {
			var reqs []string
			for _, e := range entries {
				if s, ok := e.AsString(); ok {
					reqs = append(reqs, s) // normalizeRequirements drops blanks
				}
			}
			o.Requirements = normalizeRequirements(reqs)
		}
	}
	return o, nil
}

// storedInt is a JSON int, or a string of ASCII digits (PHP's
// ctype_digit), in 1..MaxOptionInt.
func storedInt(v phpjson.Value) (int, bool) {
	var n int64
	if v.IsInt() {
		n, _ = v.AsInt64()
	} else if s, ok := v.AsString(); ok && s != "" && strings.Trim(s, "0123456789") == "" {
		var err error
		if n, err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, false // more digits than an int64 holds: too large
		}
	} else {
		return 0, false
	}
	if n < 1 || n > MaxOptionInt {
		return 0, false
	}
	return int(n), true
}

// storedBool is a JSON bool, the ints 0/1 or the strings "0"/"1".
func storedBool(v phpjson.Value) (bool, bool) {
	if b, ok := v.AsBool(); ok {
		return b, true
	}
	if v.IsInt() {
		switch n, _ := v.AsInt64(); n {
		case 0, 1:
			return n == 1, true
		}
		return false, false
	}
	if s, ok := v.AsString(); ok && (s == "0" || s == "1") {
		return s == "1", true
	}
	return false, false
}

// normalizeRequirements trims, drops blanks and de-duplicates keeping the
// first occurrence (array_values(array_unique(...)) in PHP).
func normalizeRequirements(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]struct{}, len(in))
	for _, r := range in {
		r = phpjson.Trim(r)
		if r == "" {
			continue
		}
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		out = append(out, r)
	}
	return out
}

func trimmedOrNil(s *string) *string {
	if s == nil {
		return nil
	}
	t := phpjson.Trim(*s)
	if t == "" {
		return nil
	}
	return &t
}

func positiveOr(v *int, def int) int {
	if v == nil || *v < 1 || *v > MaxOptionInt {
		return def
	}
	return *v
}

func optionalString(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Null()
	}
	return phpjson.String(*s)
}

func optionalInt(n *int) phpjson.Value {
	if n == nil {
		return phpjson.Null()
	}
	return phpjson.Int(int64(*n))
}
