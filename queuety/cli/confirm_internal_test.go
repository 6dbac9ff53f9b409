package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"
)

// confirmWith runs confirm in a command "purge" with args, on a terminal
// (tty) answering answer.
func confirmWith(t *testing.T, tty bool, answer string, args ...string) (bool, string, error) {
	t.Helper()
	a := &app{stdin: strings.NewReader(answer), tty: tty}
	var ok bool
	var errOut bytes.Buffer
	app := &ucli.App{ErrWriter: &errOut, Commands: []*ucli.Command{{Name: "purge", Flags: confirmFlags(), Action: func(c *ucli.Context) (err error) {
		ok, err = a.confirm(c, "delete 3 completed jobs older than 7 days")
		return err
	}}}}
	err := app.Run(append([]string{"queuety", "purge"}, args...))
	return ok, errOut.String(), err
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	ok, prompt, err := confirmWith(t, true, "y\n")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "purge will delete 3 completed jobs older than 7 days. Go ahead? [y/N] ", prompt)

	for _, no := range []string{"\n", "n\n", "", "yess\n"} {
		ok, _, err = confirmWith(t, true, no)
		require.False(t, ok)
		require.ErrorIs(t, err, errAborted, "%q", no)
	}

	// Not a terminal: no question, a usage error naming --yes.
	ok, prompt, err = confirmWith(t, false, "y\n")
	require.False(t, ok)
	require.Empty(t, prompt)
	var ue usageError
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, "purge would delete 3 completed jobs older than 7 days: pass --yes")

	ok, _, err = confirmWith(t, false, "", "--yes")
	require.NoError(t, err)
	require.True(t, ok)
	ok, _, err = confirmWith(t, true, "y\n", "--dry-run")
	require.NoError(t, err)
	require.False(t, ok, "--dry-run never goes ahead")
}

// /dev/null is a character device but no terminal.
func TestDevNullIsNotATerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	require.False(t, interactive(f))
	require.False(t, interactive(strings.NewReader("y\n")))
}
