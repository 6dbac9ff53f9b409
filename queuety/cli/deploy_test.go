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
	for _, v := range []string{"QUEUETY_GO_RETENTION_DAYS", "QUEUETY_GO_LOG_RETENTION_DAYS", "QUEUETY_GO_BURIED_RETENTION_DAYS", "QUEUETY_RETENTION_SCHEDULE"} {
		require.True(t, known[v], v)
	}
}

// TestDeploySystemdUnit: the single-site unit has its restart policy,
// environment file and hardening (with /home readable, so a site there
// keeps its wp-config.php), runs the binary where the .deb puts it, and
// systemd-analyze accepts it.
func TestDeploySystemdUnit(t *testing.T) {
	t.Parallel()
	unit := readDeploy(t, "queuety.service")
	requireLines(t, unit,
		"Type=notify", "ExecStart=/usr/bin/queuety work", "Restart=on-failure", "RestartPreventExitStatus=2",
		"EnvironmentFile=/etc/queuety/queuety.env", "KillSignal=SIGTERM", "User=queuety", "SupplementaryGroups=www-data",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=read-only", "PrivateTmp=yes", "CapabilityBoundingSet=",
		"WantedBy=multi-user.target",
	)
	require.NotRegexp(t, `(?m)^ProtectHome=yes$`, unit, "ProtectHome=yes hides sites under /home")
	verifyUnit(t, "queuety.service", unit)
}

// TestDeploySiteUnit: the per-site template runs as the site's user
// (User=%i, a drop-in for another), reads the site's env file, and keeps
// WordPress's PHP able to write: /etc and /usr read-only but not /var,
// /home read-only with the site's home writable again, files created
// 0644. systemd-analyze accepts an instance of it.
func TestDeploySiteUnit(t *testing.T) {
	t.Parallel()
	unit := readDeploy(t, "queuety@.service")
	requireLines(t, unit,
		"Type=notify", "ExecStart=/usr/bin/queuety work", "Restart=on-failure", "RestartPreventExitStatus=2",
		"User=%i", "EnvironmentFile=/etc/queuety/%i.env", "AssertPathExists=/etc/queuety/%i.env",
		"NoNewPrivileges=yes", "ProtectSystem=full", "ProtectHome=read-only", "ReadWritePaths=-/home/%i",
		"UMask=0022", "SystemCallErrorNumber=EPERM", "CapabilityBoundingSet=", "WantedBy=multi-user.target",
	)
	// What would break WordPress's PHP: hidden or read-only site files,
	// files the web server cannot read, PCRE's JIT, the web server's IPC.
	for _, hides := range []string{"ProtectHome=yes", "ProtectHome=tmpfs", "ProtectSystem=strict", "UMask=0077", "Group=.*",
		"MemoryDenyWriteExecute=yes", "RemoveIPC=yes"} {
		require.NotRegexp(t, `(?m)^`+hides+`$`, unit)
	}
	// The example env file is one the unit can read, with flags that exist.
	known := envVars()
	env := readDeploy(t, "site.env.example")
	for _, m := range regexp.MustCompile(`(?m)^#?(QUEUETY_[A-Z_]+)=`).FindAllStringSubmatch(env, -1) {
		require.True(t, known[m[1]], "deploy/site.env.example sets %s, which no flag reads", m[1])
	}
	require.Regexp(t, `(?m)^QUEUETY_WP_CONFIG=`, env)
	verifyUnit(t, "queuety@blog.service", unit)
}

func requireLines(t *testing.T, unit string, lines ...string) {
	t.Helper()
	for _, line := range lines {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(line)+`$`, unit)
	}
}

// verifyUnit runs systemd-analyze verify on the unit, saved as name, with
// the stock binary as ExecStart and the example env files in place of
// /etc/queuety's: verify wants both to exist. Any warning fails.
func verifyUnit(t *testing.T, name, unit string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	require.NoError(t, err, "systemd-analyze (Debian's systemd package) verifies the units")
	deploy, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	require.NoError(t, err)
	unit = strings.Replace(unit, "ExecStart=/usr/bin/queuety", "ExecStart="+stockBinary(t), 1)
	unit = strings.ReplaceAll(unit, "/etc/queuety/queuety.env", filepath.Join(deploy, "queuety.env"))
	unit = strings.ReplaceAll(unit, "/etc/queuety/%i.env", filepath.Join(deploy, "site.env.example"))
	path := filepath.Join(t.TempDir(), name)
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
