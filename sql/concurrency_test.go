package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Queue::dispatch trims the group with PHP's trim(): NUL goes, \f and
// Unicode spaces stay (php -r on PHP 8.2.36). Earlier builds used Go's
// TrimSpace here, which kept NUL and stripped the other two, so the same
// dispatch stored another group than PHP's, and another than a workflow
// step's (which already trimmed like PHP).
func TestInsertJobConcurrencyGroupTrimsLikePHP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		group string
		want  any // string, or nil for NULL
	}{
		{"\x00gpu", "gpu"},
		{"gpu\u00a0", "gpu\u00a0"},
		{"\fgpu", "\fgpu"},
		{"\x00\x0b", nil},
	} {
		t.Run(fmt.Sprintf("%q", tc.group), func(t *testing.T) {
			j := e.job(e.dispatch(InsertJob{ConcurrencyGroup: tc.group, ConcurrencyLimit: 2}))
			if tc.want == nil {
				require.False(t, j.ConcurrencyGroup.Valid)
				require.False(t, j.ConcurrencyLimit.Valid)
				return
			}
			require.Equal(t, String(tc.want.(string)), j.ConcurrencyGroup)
			require.Equal(t, Int(2), j.ConcurrencyLimit)
		})
	}
}
