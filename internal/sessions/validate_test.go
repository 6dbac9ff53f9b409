package sessions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateWorkerIDControlBytes(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a\x00b", "a\nb", "tab\there", "\x1b[2J", "del\x7f", "c1\u0085"} {
		require.ErrorIs(t, ValidateWorkerID(id), ErrInvalidWorkerID, "%q", id)
	}
	require.NoError(t, ValidateWorkerID("host-42.pid_7:é"))
}

func TestCheckCapabilitiesTotal(t *testing.T) {
	t.Parallel()
	caps := make([]string, 0, 10000)
	for i := range 10000 {
		caps = append(caps, fmt.Sprintf("cap:%04d", i))
	}
	err := CheckCapabilities(caps)
	require.ErrorIs(t, err, ErrInvalidRegistration)
	require.ErrorContains(t, err, "at most 32768")
	require.NoError(t, CheckCapabilities([]string{"gpu:nvidia-l4", strings.Repeat("x", 255)}))
}
