package sessions

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

func ptr[T any](v T) *T { return &v }

func encode(t *testing.T, v phpjson.Value) string {
	t.Helper()
	b, err := phpjson.Encode(v)
	require.NoError(t, err)
	return string(b)
}

func TestOptionsValidateMessages(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		o   Options
		msg string
	}{
		"blank id":          {Options{SessionID: " \t"}, "Worker session session id must be a non-empty string."},
		"empty id":          {Options{}, "Worker session session id must be a non-empty string."},
		"blank connection":  {Options{SessionID: "s", Connection: ptr(" ")}, "Worker session connection must be a non-empty string."},
		"empty queue":       {Options{SessionID: "s", Queue: ptr("")}, "Worker session queue must be a non-empty string."},
		"blank requirement": {Options{SessionID: "s", Requirements: []string{"gpu", " "}}, "Worker session requirement at index 1 must be a non-empty string."},
		"zero lease":        {Options{SessionID: "s", LeaseSeconds: ptr(0)}, "Worker session leaseSeconds must be a positive integer."},
		"negative ttl":      {Options{SessionID: "s", TTLSeconds: ptr(-5)}, "Worker session ttlSeconds must be a positive integer."},
		"zero max":          {Options{SessionID: "s", MaxConcurrentActivities: ptr(0)}, "Worker session maxConcurrentActivities must be a positive integer."},
		// The library's constructor checks requirements before the ints.
		"first violation wins": {Options{SessionID: "s", Requirements: []string{""}, LeaseSeconds: ptr(0)}, "Worker session requirement at index 0 must be a non-empty string."},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := c.o.Validate()
			require.Error(t, err)
			require.Equal(t, c.msg, err.Error())
		})
	}
	require.NoError(t, Options{SessionID: "gpu-render", Queue: ptr("q"), LeaseSeconds: ptr(1), Requirements: []string{"a"}}.Validate())
}

func TestOptionsSnapshotMatchesLibraryShape(t *testing.T) {
	t.Parallel()
	o := Options{
		SessionID:    " gpu-render ",
		Queue:        ptr("gpu-activities"),
		Requirements: []string{" gpu:nvidia-l4", "gpu:nvidia-l4 ", "fs:/mnt"},
		LeaseSeconds: ptr(120),
		TTLSeconds:   ptr(1800),
	}
	require.Equal(t,
		`{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":null,"create_if_missing":true,"allow_reacquire_after_failure":true}`,
		encode(t, o.Snapshot()))

	bare := Options{SessionID: "s", CreateIfMissing: ptr(false), AllowReacquireAfterFailure: ptr(false)}
	require.Equal(t,
		`{"session_id":"s","connection":null,"queue":null,"requirements":[],"lease_seconds":null,"ttl_seconds":null,"max_concurrent_activities":null,"create_if_missing":false,"allow_reacquire_after_failure":false}`,
		encode(t, bare.Snapshot()))
}

func TestOptionsNormalizeFillsDefaults(t *testing.T) {
	t.Parallel()
	n := Options{SessionID: "\x00s\n", Connection: ptr(" db "), Requirements: []string{"b", " a", "b"}}.Normalize()
	require.Equal(t, Normalized{
		SessionID:                  "s",
		Connection:                 ptr("db"),
		Requirements:               []string{"b", "a"},
		LeaseSeconds:               DefaultLeaseSeconds,
		TTLSeconds:                 DefaultTTLSeconds,
		MaxConcurrentActivities:    DefaultMaxConcurrentActivities,
		CreateIfMissing:            true,
		AllowReacquireAfterFailure: true,
	}, n)
	require.Equal(t,
		`{"session_id":"s","connection":"db","queue":null,"requirements":["b","a"],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`,
		encode(t, n.Snapshot()))

	// Lenient like the server's normalization of stored snapshots.
	n = Options{SessionID: "s", Queue: ptr(" "), LeaseSeconds: ptr(0), TTLSeconds: ptr(5), MaxConcurrentActivities: ptr(3),
		CreateIfMissing: ptr(false), AllowReacquireAfterFailure: ptr(false)}.Normalize()
	require.Nil(t, n.Queue)
	require.Equal(t, DefaultLeaseSeconds, n.LeaseSeconds)
	require.Equal(t, 5, n.TTLSeconds)
	require.Equal(t, 3, n.MaxConcurrentActivities)
	require.False(t, n.CreateIfMissing)
	require.False(t, n.AllowReacquireAfterFailure)
	// PHP's trim does not strip a non-breaking space; neither do we.
	require.Equal(t, "\u00a0s", Options{SessionID: "\u00a0s"}.Normalize().SessionID)
}

func parse(t *testing.T, js string) (Options, error) {
	t.Helper()
	v, err := phpjson.DecodeString(js)
	require.NoError(t, err)
	return ParseOptions(v)
}

func TestParseOptionsAcceptsFullObject(t *testing.T) {
	t.Parallel()
	o, err := parse(t, `{"session_id":" gpu-render ","connection":"c","queue":"gpu-activities","requirements":["gpu:nvidia-l4"," gpu:nvidia-l4","x"],
		"lease_seconds":60,"ttl_seconds":600,"max_concurrent_activities":2,"create_if_missing":false,"allow_reacquire_after_failure":true}`)
	require.NoError(t, err)
	require.Equal(t, Options{
		SessionID: "gpu-render", Connection: ptr("c"), Queue: ptr("gpu-activities"),
		Requirements: []string{"gpu:nvidia-l4", "x"}, LeaseSeconds: ptr(60), TTLSeconds: ptr(600),
		MaxConcurrentActivities: ptr(2), CreateIfMissing: ptr(false), AllowReacquireAfterFailure: ptr(true),
	}, o)

	// Explicit null is "not provided".
	o, err = parse(t, `{"session_id":"s","connection":null,"queue":null,"requirements":null,"lease_seconds":null,"ttl_seconds":null,
		"max_concurrent_activities":null,"create_if_missing":null,"allow_reacquire_after_failure":null,"unknown":1}`)
	require.NoError(t, err)
	require.Equal(t, Options{SessionID: "s"}, o)

	// A snapshot round-trips.
	full := Options{SessionID: "s", Queue: ptr("q"), Requirements: []string{"a"}, LeaseSeconds: ptr(9), CreateIfMissing: ptr(false), AllowReacquireAfterFailure: ptr(true)}
	o, err = ParseOptions(full.Snapshot())
	require.NoError(t, err)
	require.Equal(t, full, o)
}

func requireFieldErrors(t *testing.T, err error, want ...FieldError) {
	t.Helper()
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "want *ValidationError, got %v", err)
	require.Equal(t, want, ve.Errors)
}

func TestParseOptionsRejectsWithNormalizerMessages(t *testing.T) {
	t.Parallel()
	notObject := "Workflow task command field [worker_session] must be an object when provided."
	noID := "Worker session commands require a non-empty session_id."
	for _, js := range []string{`"session"`, `false`, `7`, `1.5`, `null`} {
		_, err := parse(t, js)
		requireFieldErrors(t, err, FieldError{"", notObject})
	}
	for _, js := range []string{`[]`, `{}`, `["a"]`, `{"session_id":null}`, `{"session_id":""}`, `{"session_id":" "}`,
		`{"session_id":7}`, `{"session_id":false}`, `{"session_id":[]}`} {
		_, err := parse(t, js)
		requireFieldErrors(t, err, FieldError{"session_id", noID})
	}
	for _, f := range []string{"connection", "queue"} {
		for _, bad := range []string{`""`, `" "`, `7`, `[]`} {
			_, err := parse(t, `{"session_id":"s","`+f+`":`+bad+`}`)
			requireFieldErrors(t, err, FieldError{f, "Worker session field [" + f + "] must be a non-empty string when provided."})
		}
	}
	for _, f := range []string{"lease_seconds", "ttl_seconds", "max_concurrent_activities"} {
		for _, bad := range []string{`0`, `-1`, `"1"`, `1.5`, `1.0`, `true`, `[]`, `99999999999999999999`} {
			_, err := parse(t, `{"session_id":"s","`+f+`":`+bad+`}`)
			requireFieldErrors(t, err, FieldError{f, "Worker session field [" + f + "] must be a positive integer when provided."})
		}
	}
	for _, f := range []string{"create_if_missing", "allow_reacquire_after_failure"} {
		for _, bad := range []string{`0`, `1`, `"false"`, `[]`} {
			_, err := parse(t, `{"session_id":"s","`+f+`":`+bad+`}`)
			requireFieldErrors(t, err, FieldError{f, "Worker session field [" + f + "] must be boolean when provided."})
		}
	}
	for _, bad := range []string{`"gpu:l4"`, `false`, `7`} {
		_, err := parse(t, `{"session_id":"s","requirements":`+bad+`}`)
		requireFieldErrors(t, err, FieldError{"requirements", "Worker session requirements must be a list of non-empty strings."})
	}
	for _, bad := range []string{`""`, `" "`, `7`, `false`, `null`, `[]`} {
		_, err := parse(t, `{"session_id":"s","requirements":["gpu:l4",`+bad+`,"fs:/mnt/models"]}`)
		requireFieldErrors(t, err, FieldError{"requirements.1", "Worker session requirements must be non-empty strings."})
	}
}

func TestParseOptionsReportsEveryField(t *testing.T) {
	t.Parallel()
	_, err := parse(t, `{"session_id":"gpu-render","connection":" ","queue":[],"lease_seconds":0,"ttl_seconds":"1800",
		"max_concurrent_activities":false,"create_if_missing":1,"allow_reacquire_after_failure":"false",
		"requirements":[" ","gpu:l4",7,"fs:/mnt/models"]}`)
	requireFieldErrors(t, err,
		FieldError{"connection", "Worker session field [connection] must be a non-empty string when provided."},
		FieldError{"queue", "Worker session field [queue] must be a non-empty string when provided."},
		FieldError{"lease_seconds", "Worker session field [lease_seconds] must be a positive integer when provided."},
		FieldError{"ttl_seconds", "Worker session field [ttl_seconds] must be a positive integer when provided."},
		FieldError{"max_concurrent_activities", "Worker session field [max_concurrent_activities] must be a positive integer when provided."},
		FieldError{"create_if_missing", "Worker session field [create_if_missing] must be boolean when provided."},
		FieldError{"allow_reacquire_after_failure", "Worker session field [allow_reacquire_after_failure] must be boolean when provided."},
		FieldError{"requirements.0", "Worker session requirements must be non-empty strings."},
		FieldError{"requirements.2", "Worker session requirements must be non-empty strings."},
	)
	require.Contains(t, err.Error(), "worker_session.requirements.2: Worker session requirements must be non-empty strings.")
}

func TestParseOptionsRequirementsAsPHPArray(t *testing.T) {
	t.Parallel()
	// PHP's is_array accepts a keyed array; array_values keeps the values in order.
	o, err := parse(t, `{"session_id":"s","requirements":{"x":"b","y":"a"}}`)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, o.Requirements)
	o, err = parse(t, `{"session_id":"s","requirements":[]}`)
	require.NoError(t, err)
	require.Empty(t, o.Requirements)
}

// The integer options are stored in INT UNSIGNED columns: a value above
// MaxOptionInt is refused when authored or parsed, and falls back to the
// default when normalized, so it never reaches a session row.
func TestIntegerOptionsAreBounded(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		o   Options
		msg string
	}{
		"lease":      {Options{SessionID: "s", LeaseSeconds: ptr(MaxOptionInt + 1)}, "Worker session leaseSeconds must be a positive integer of at most 2147483647."},
		"ttl":        {Options{SessionID: "s", TTLSeconds: ptr(9_000_000_000_000)}, "Worker session ttlSeconds must be a positive integer of at most 2147483647."},
		"max":        {Options{SessionID: "s", MaxConcurrentActivities: ptr(1 << 40)}, "Worker session maxConcurrentActivities must be a positive integer of at most 2147483647."},
		"zero first": {Options{SessionID: "s", LeaseSeconds: ptr(0), TTLSeconds: ptr(MaxOptionInt + 1)}, "Worker session leaseSeconds must be a positive integer."},
	} {
		err := c.o.Validate()
		require.Error(t, err, name)
		require.Equal(t, c.msg, err.Error(), name)
	}
	top := Options{SessionID: "s", LeaseSeconds: ptr(MaxOptionInt), TTLSeconds: ptr(MaxOptionInt), MaxConcurrentActivities: ptr(MaxOptionInt)}
	require.NoError(t, top.Validate())
	n := top.Normalize()
	require.Equal(t, []int{MaxOptionInt, MaxOptionInt, MaxOptionInt}, []int{n.LeaseSeconds, n.TTLSeconds, n.MaxConcurrentActivities})
	n = Options{SessionID: "s", LeaseSeconds: ptr(MaxOptionInt + 1), TTLSeconds: ptr(5_000_000_000), MaxConcurrentActivities: ptr(1 << 40)}.Normalize()
	require.Equal(t, []int{DefaultLeaseSeconds, DefaultTTLSeconds, DefaultMaxConcurrentActivities}, []int{n.LeaseSeconds, n.TTLSeconds, n.MaxConcurrentActivities})

	for _, f := range []string{"lease_seconds", "ttl_seconds", "max_concurrent_activities"} {
		o, err := parse(t, `{"session_id":"s","`+f+`":2147483647}`)
		require.NoError(t, err, f)
		require.Equal(t, withInt(Options{SessionID: "s"}, f, MaxOptionInt), o, f)
		for _, big := range []string{`2147483648`, `5000000000`, `9000000000000`, `9223372036854775807`} {
			_, err := parse(t, `{"session_id":"s","`+f+`":`+big+`}`)
			requireFieldErrors(t, err, FieldError{f, "Worker session field [" + f + "] must be a positive integer of at most 2147483647 when provided."})
		}
	}
}

// withInt sets the integer option named by its snapshot key.
func withInt(o Options, key string, n int) Options {
	switch key {
	case "lease_seconds":
		o.LeaseSeconds = &n
	case "ttl_seconds":
		o.TTLSeconds = &n
	case "max_concurrent_activities":
		o.MaxConcurrentActivities = &n
	}
	return o
}

func parseStored(t *testing.T, js string) (Options, error) {
	t.Helper()
	v, err := phpjson.DecodeString(js)
	require.NoError(t, err)
	return ParseStored(v)
}

// A stored snapshot is read leniently: a bad value falls back to its
// default instead of stranding the job that carries it.
func TestParseStoredFallsBackToDefaults(t *testing.T) {
	t.Parallel()
	// What Normalized.Snapshot stores reads back unchanged.
	full := Options{SessionID: "gpu-render", Connection: ptr("c"), Queue: ptr("q"), Requirements: []string{"gpu:l4"},
		LeaseSeconds: ptr(60), TTLSeconds: ptr(600), MaxConcurrentActivities: ptr(2),
		CreateIfMissing: ptr(false), AllowReacquireAfterFailure: ptr(true)}
	o, err := ParseStored(full.Normalize().Snapshot())
	require.NoError(t, err)
	require.Equal(t, full, o)

	for _, f := range []string{"lease_seconds", "ttl_seconds", "max_concurrent_activities"} {
		for js, want := range map[string]*int{
			`7`: ptr(7), `"7"`: ptr(7), `"0042"`: ptr(42), `2147483647`: ptr(MaxOptionInt), `"2147483647"`: ptr(MaxOptionInt),
			`0`: nil, `-3`: nil, `"0"`: nil, `"-3"`: nil, `" 7"`: nil, `"7.0"`: nil, `"+7"`: nil, `""`: nil, `"abc"`: nil,
			`7.5`: nil, `7.0`: nil, `1e3`: nil, `true`: nil, `[]`: nil, `{}`: nil, `null`: nil,
			`2147483648`: nil, `"2147483648"`: nil, `9223372036854775807`: nil, `"99999999999999999999999"`: nil,
		} {
			o, err := parseStored(t, `{"session_id":"s","`+f+`":`+js+`}`)
			require.NoError(t, err, "%s: %s", f, js)
			wantOpts := Options{SessionID: "s"}
			if want != nil {
				wantOpts = withInt(wantOpts, f, *want)
			}
			require.Equal(t, wantOpts, o, "%s: %s", f, js)
		}
	}
	for js, want := range map[string]*bool{
		`true`: ptr(true), `false`: ptr(false), `1`: ptr(true), `0`: ptr(false), `"1"`: ptr(true), `"0"`: ptr(false),
		`2`: nil, `-1`: nil, `1.0`: nil, `"true"`: nil, `"false"`: nil, `""`: nil, `[]`: nil, `null`: nil,
	} {
		o, err := parseStored(t, `{"session_id":"s","create_if_missing":`+js+`,"allow_reacquire_after_failure":`+js+`}`)
		require.NoError(t, err, js)
		require.Equal(t, Options{SessionID: "s", CreateIfMissing: want, AllowReacquireAfterFailure: want}, o, js)
		n := o.Normalize()
		require.Equal(t, want == nil || *want, n.CreateIfMissing, js)
		require.Equal(t, want == nil || *want, n.AllowReacquireAfterFailure, js)
	}

	// Strings and requirements: blanks and non-strings are dropped.
	o, err = parseStored(t, `{"session_id":" s ","connection":" ","queue":7,"requirements":[" gpu",7,"","gpu",null,"fs"]}`)
	require.NoError(t, err)
	require.Equal(t, Options{SessionID: "s", Requirements: []string{"gpu", "fs"}}, o)
	o, err = parseStored(t, `{"session_id":"s","connection":" db ","queue":" q ","requirements":"gpu"}`)
	require.NoError(t, err)
	require.Equal(t, Options{SessionID: "s", Connection: ptr("db"), Queue: ptr("q")}, o)
	o, err = parseStored(t, `{"session_id":"s","requirements":{"a":"x","b":"y"}}`)
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, o.Requirements)
}

// Only what has no default is still an error: a value that is not an
// object and a missing or blank session id.
func TestParseStoredRejectsWhatHasNoDefault(t *testing.T) {
	t.Parallel()
	for _, js := range []string{`"session"`, `false`, `7`, `1.5`, `null`} {
		_, err := parseStored(t, js)
		requireFieldErrors(t, err, FieldError{"", "Workflow task command field [worker_session] must be an object when provided."})
	}
	for _, js := range []string{`[]`, `{}`, `["s"]`, `{"session_id":null}`, `{"session_id":""}`, `{"session_id":" \t"}`,
		`{"session_id":7}`, `{"session_id":true}`, `{"lease_seconds":5}`} {
		_, err := parseStored(t, js)
		requireFieldErrors(t, err, FieldError{"session_id", "Worker session commands require a non-empty session_id."})
	}
}
