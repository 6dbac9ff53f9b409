package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

func limitsConfigOf(t *testing.T, args ...string) (queuety.Config, error) {
	t.Helper()
	var cfg queuety.Config
	app := &ucli.App{
		Flags:  append(limitFlags(), &ucli.StringFlag{Name: "wp-config"}),
		Action: func(c *ucli.Context) error { return limitsConfig(c, &cfg) },
	}
	err := app.Run(append([]string{"work"}, args...))
	return cfg, err
}

func TestLimitFlags(t *testing.T) {
	cfg, err := limitsConfigOf(t, "--debug", "--queue-cost-budgets", " default=10, llm=3 ", "--group-cost-budgets", "openai=6")
	require.NoError(t, err)
	require.True(t, cfg.Debug)
	require.Equal(t, map[string]int64{"default": 10, "llm": 3}, cfg.QueueCostBudgets)
	require.Equal(t, map[string]int64{"openai": 6}, cfg.GroupCostBudgets)

	_, err = limitsConfigOf(t, "--queue-cost-budgets", "default=0")
	require.ErrorContains(t, err, `--queue-cost-budgets: "default=0": want name=units`)
	_, err = limitsConfigOf(t, "--group-cost-budgets", "openai")
	require.ErrorContains(t, err, "--group-cost-budgets")

	// Unset flags take the site's constants; a flag wins over its constant.
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte(`<?php
define('DB_NAME', 'wp'); define('DB_USER', 'u'); define('DB_HOST', 'h');
define('QUEUETY_RESOURCE_QUEUE_COST_BUDGETS', ['default' => 4, 'bad' => 0]);
define('QUEUETY_RESOURCE_GROUP_COST_BUDGETS', array('openai' => '2'));
`), 0o600))
	cfg, err = limitsConfigOf(t, "--wp-config", path, "--group-cost-budgets", "openai=9")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"default": 4}, cfg.QueueCostBudgets)
	require.Equal(t, map[string]int64{"openai": 9}, cfg.GroupCostBudgets)
	require.False(t, cfg.Debug)
}
