package testbin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// QUEUETY_BIN, set by scripts/test.sh, is used instead of a build of the
// package's own; one that does not exist is an error, not a silent build.
// t.Setenv forbids t.Parallel.
func TestPrebuilt(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "queuety")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))

	t.Setenv("QUEUETY_BIN", "")
	_, ok, err := prebuilt()
	require.NoError(t, err)
	require.False(t, ok)

	t.Setenv("QUEUETY_BIN", bin+".missing")
	_, ok, err = prebuilt()
	require.True(t, ok)
	require.ErrorContains(t, err, "QUEUETY_BIN: stat "+bin+".missing")

	t.Setenv("QUEUETY_BIN", bin)
	got, err := Queuety()
	require.NoError(t, err)
	require.Equal(t, bin, got)
	Cleanup()
	require.FileExists(t, bin, "a prebuilt binary is not the package's to remove")
}
