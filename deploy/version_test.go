package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleaseVersions: scripts/release.sh turns a git-describe version into
// the Debian version dpkg orders as the commits are (a release candidate
// before its release, commits and changes after it), and refuses a version
// that is not v<major>.<minor>.<patch> before building anything.
func TestReleaseVersions(t *testing.T) {
	t.Parallel()
	script := filepath.Join("..", "scripts", "release.sh")
	debOf := func(version string) (string, error) {
		cmd := exec.Command(script, "version")
		cmd.Env = append(os.Environ(), "VERSION="+version)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct{ version, deb string }{
		{"v1.2.3-rc.1", "1.2.3~rc.1"},
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"v1.2.3-4-gabcdef1", "1.2.3+4.gabcdef1"},
		{"v1.2.3-4-gabcdef1-dirty", "1.2.3+4.gabcdef1.dirty"},
	} {
		out, err := debOf(tc.version)
		require.NoError(t, err, out)
		require.Equal(t, tc.version+" "+tc.deb+"\n", out)
	}
	// dpkg's order: each before the next.
	for _, chain := range [][]string{
		{"1.2.3~rc.1", "1.2.3", "1.2.3+4.gabcdef1", "1.2.3+4.gabcdef1.dirty", "1.2.3+12.g0123456", "1.3.0"},
		{"1.2.3", "1.2.3+dirty", "1.3.0"},
	} {
		for i := 1; i < len(chain); i++ {
			require.NoError(t, exec.Command("dpkg", "--compare-versions", chain[i-1], "lt", chain[i]).Run(), "%s < %s", chain[i-1], chain[i])
		}
	}
	for _, bad := range []string{"1.2.3", "v1.2", "latest", "v1.2.3 ; rm"} {
		out, err := debOf(bad)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, bad)
		require.Equal(t, 2, exit.ExitCode(), out)
		require.True(t, strings.HasPrefix(out, "release: VERSION "+bad+" is not v<major>.<minor>.<patch>"), out)
	}
}
