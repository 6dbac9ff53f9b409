package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety/cli"
)

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	require.NoError(t, err)
	return string(b)
}

// envVars lists the environment variables of the app's flags.
func envVars() map[string]bool {
	out := map[string]bool{}
	var add func([]ucli.Flag)
	add = func(flags []ucli.Flag) {
		for _, f := range flags {
			if d, ok := f.(ucli.DocGenerationFlag); ok {
				for _, e := range d.GetEnvVars() {
					out[e] = true
				}
			}
		}
	}
	app := cli.New(cli.Options{})
	add(app.Flags)
	var walk func([]*ucli.Command)
	walk = func(cmds []*ucli.Command) {
		for _, c := range cmds {
			add(c.Flags)
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
	return out
}

// TestDeployEnvFile: every variable the example environment file sets (or
// shows commented out) is one a flag reads.
func TestDeployEnvFile(t *testing.T) {
	t.Parallel()
	known := envVars()
	names := regexp.MustCompile(`(?m)^#?(QUEUETY_[A-Z_]+)=`).FindAllStringSubmatch(readDeploy(t, "queuety.env"), -1)
	require.NotEmpty(t, names)
	for _, m := range names {
		require.True(t, known[m[1]], "deploy/queuety.env sets %s, which no flag reads", m[1])
	}
	for _, v := range []string{"QUEUETY_RETENTION_DAYS", "QUEUETY_LOG_RETENTION_DAYS", "QUEUETY_BURIED_RETENTION_DAYS", "QUEUETY_RETENTION_SCHEDULE"} {
		require.True(t, known[v], v)
	}
}

// TestDeploySystemdUnit: the unit has its restart policy, environment file
// and hardening, and systemd-analyze (where installed) accepts it with the
// stock binary as ExecStart.
func TestDeploySystemdUnit(t *testing.T) {
	t.Parallel()
	unit := readDeploy(t, "queuety.service")
	for _, line := range []string{
		"Type=notify", "ExecStart=/usr/local/bin/queuety work", "Restart=on-failure", "RestartPreventExitStatus=2",
		"EnvironmentFile=/etc/queuety/queuety.env", "KillSignal=SIGTERM",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
		"WantedBy=multi-user.target",
	} {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(line)+`$`, unit)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		// Debian's systemd package; this project's machines have it.
		t.Log("no systemd-analyze: the unit's text was checked, not verified")
		return
	}
	bin := stockBinary(t)
	env, err := filepath.Abs(filepath.Join("..", "..", "deploy", "queuety.env"))
	require.NoError(t, err)
	unit = strings.Replace(unit, "ExecStart=/usr/local/bin/queuety", "ExecStart="+bin, 1)
	unit = strings.Replace(unit, "EnvironmentFile=/etc/queuety/queuety.env", "EnvironmentFile="+env, 1)
	// The test host has no queuety user.
	unit = regexp.MustCompile(`(?m)^(User|Group)=.*$`).ReplaceAllString(unit, "")
	path := filepath.Join(t.TempDir(), "queuety.service")
	require.NoError(t, os.WriteFile(path, []byte(unit), 0o644))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Empty(t, strings.TrimSpace(string(out)))
}

// TestDeployDockerfile: it cannot be built here (no Docker engine), so
// this checks its shape: a golang:1.26 build stage that builds the stock
// binary with the version variable TestVersionLinkTime links, and a
// distroless runtime running `work` as a non-root user.
func TestDeployDockerfile(t *testing.T) {
	t.Parallel()
	df := readDeploy(t, "Dockerfile")
	from := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	require.Len(t, from, 2)
	require.Equal(t, "golang:1.26", from[0][1])
	require.True(t, strings.HasPrefix(from[1][1], "gcr.io/distroless/"), from[1][1])
	require.Contains(t, df, "-X github.com/queuety-go/queuety/queuety/cli.Version=${VERSION}")
	require.Contains(t, df, "./cmd/queuety")
	require.Contains(t, df, "CGO_ENABLED=0")
	require.Regexp(t, `(?m)^USER nonroot`, df)
	require.Regexp(t, `(?m)^CMD \["work"\]$`, df)
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^go 1\.26(\.\d+)?$`, string(gomod), "the build stage's Go must match go.mod")
}
