package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"
)

// `work --php` without --concurrency runs phpSlotsPerProcess slots a PHP
// process and, without --max-conns, phpConnsPerProcess connections a
// process plus 4, not the generic concurrency/4+4 (204 for 800 slots, more
// than MariaDB's default max_connections). A flag the operator sets wins.
func TestPHPPoolDefaultsFollowThePool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args         []string
		slots, conns int
	}{
		{nil, 800, 20},
		{[]string{"--php-workers", "1"}, 200, 8},
		{[]string{"--concurrency", "50"}, 50, 0}, // 0: the generic default
		{[]string{"--max-conns", "9"}, 800, 9},
		{[]string{"--concurrency", "30", "--max-conns", "6"}, 30, 6},
	} {
		var slots, conns int
		app := &ucli.App{Flags: append(workerFlags(), phpFlags()...), Action: func(c *ucli.Context) error {
			slots = phpConcurrency(c, c.Int("concurrency"), c.Int("php-workers"))
			conns = phpMaxConns(c, c.Int("max-conns"), c.Int("php-workers"))
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"work"}, tc.args...)))
		require.Equal(t, tc.slots, slots, "slots with %v", tc.args)
		require.Equal(t, tc.conns, conns, "connections with %v", tc.args)
	}
}
