package cli_test

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// TestVersion: text and JSON name the version and the Go version; no
// database is needed.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := runOK(t, "version")
	require.Regexp(t, `^queuety \S+\ncommit .+\n`+runtime.Version()+` `+runtime.GOOS+`/`+runtime.GOARCH+`\n$`, r.stdout)
	var b cli.BuildInfo
	decodeJSON(t, runOK(t, "version", "--json"), &b)
	require.Equal(t, runtime.Version(), b.GoVersion)
	require.NotEmpty(t, b.Version)
	require.Equal(t, cli.ExitUsage, run(t, "version", "extra").code)
}

// TestVersionLinkTime: the stock binary built with -X ...cli.Version
// prints that version.
func TestVersionLinkTime(t *testing.T) {
	t.Parallel()
	bin := t.TempDir() + "/queuety"
	build := exec.Command("go", "build", "-ldflags",
		"-X github.com/queuety-go/queuety/queuety/cli.Version=v9.8.7-test -X github.com/queuety-go/queuety/queuety/cli.Commit=0123abc",
		"-o", bin, "../../cmd/queuety")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(bin, "version", "--json").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), `"version": "v9.8.7-test"`)
	require.Contains(t, string(out), `"commit": "0123abc"`)
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Equal(t, "queuety version v9.8.7-test\n", string(out))
}

// TestCompletion: the scripts ask the binary with urfave/cli's
// --generate-bash-completion, which answers commands, subcommands and flags.
func TestCompletion(t *testing.T) {
	t.Parallel()
	bash := runOK(t, "completion", "bash").stdout
	require.Contains(t, bash, "--generate-bash-completion")
	require.Contains(t, bash, "complete -o bashdefault -o default -F _queuety_complete queuety")
	zsh := runOK(t, "completion", "zsh").stdout
	require.True(t, strings.HasPrefix(zsh, "#compdef queuety\n"), zsh)
	require.Contains(t, runOK(t, "completion", "fish").stdout, "complete -c queuety")
	require.Equal(t, cli.ExitUsage, run(t, "completion", "tcsh").code)
	require.Equal(t, cli.ExitUsage, run(t, "completion").code)

	// urfave/cli reads the process's own os.Args to complete, so the
	// answers come from the stock binary.
	bin := stockBinary(t)
	words := func(args ...string) []string {
		out, err := exec.Command(bin, append(args, "--generate-bash-completion")...).Output()
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
	require.Subset(t, words(), []string{"work", "purge", "version", "completion", "workflow"})
	require.Subset(t, words("job"), []string{"list", "retry-buried", "delete"})
	require.Subset(t, words("purge", "-"), []string{"--kind", "--older-than", "--dry-run"})

	// The bash script, run by bash against the stock binary.
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := bash + `
COMP_WORDS=(queuety pur); COMP_CWORD=1; _queuety_complete; echo "${COMPREPLY[@]}"
COMP_WORDS=(queuety purge --ki); COMP_CWORD=2; _queuety_complete; echo "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "-c", "queuety() { "+bin+` "$@"; }`+"\n"+script)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "purge\n--kind\n", string(out))
}
