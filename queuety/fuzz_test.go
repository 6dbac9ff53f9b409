package queuety

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

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
		",", "10,-5", "nonsense", "+5", "05", "1e3", "9223372036854775807", "10000000000", "Fixed", "10,30,60,",
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
			d := b.Delay(attempt)
			require.GreaterOrEqual(t, d, time.Duration(0), "%q attempt %d", s, attempt)
			require.LessOrEqual(t, d, time.Duration(maxSeconds)*time.Second, "%q attempt %d", s, attempt)
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
		`{"__queuety_runtime":{"timeout_seconds":10000000000,"backoff":[10000000000]}}`,
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
		require.GreaterOrEqual(t, r.Timeout, time.Duration(0))
		require.LessOrEqual(t, r.Timeout, time.Duration(maxSeconds)*time.Second)
		if r.Backoff == nil {
			return
		}
		if r.Backoff.List == nil {
			require.NoError(t, r.Backoff.validate())
		}
		for _, attempt := range []int{1, 2, 5, 300} {
			require.GreaterOrEqual(t, r.Backoff.Delay(attempt), time.Duration(0))
		}
	})
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
