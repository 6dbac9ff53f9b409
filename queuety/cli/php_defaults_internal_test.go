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

// TestPHPMemoryLimitFlag (N9): --php-memory-limit defaults to 1,024 MiB,
// 0 turns it off, a value below --php-max-memory is refused (the process
// would be killed before it could be recycled), and a --php-max-memory
// set above the default limit alone moves the limit up with it.
func TestPHPMemoryLimitFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		limit int
		err   string
	}{
		{nil, 1024, ""},
		{[]string{"--php-memory-limit", "0"}, -1, ""},
		{[]string{"--php-memory-limit", "300"}, 300, ""},
		{[]string{"--php-max-memory", "2048"}, 4096, ""},
		{[]string{"--php-memory-limit", "100"}, 0, "below --php-max-memory 128"},
		{[]string{"--php-memory-limit", "-5"}, 0, "must not be negative"},
	} {
		var limit int
		app := &ucli.App{Flags: phpFlags(), Action: func(c *ucli.Context) error {
			cfg, _, err := phpPoolConfig(c)
			limit = cfg.MemoryLimitMB
			return err
		}}
		err := app.Run(append([]string{"work", "--php", "php worker.php"}, tc.args...))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.args)
			continue
		}
		require.NoError(t, err, tc.args)
		require.Equal(t, tc.limit, limit, tc.args)
	}
}
