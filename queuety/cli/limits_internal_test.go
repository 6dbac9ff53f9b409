package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

func limitsConfigOf(t *testing.T, args ...string) (queuety.Config, error) {
	t.Helper()
	var cfg queuety.Config
	app := &ucli.App{
		Flags:  limitFlags(),
		Action: func(c *ucli.Context) error { return limitsConfig(c, &cfg) },
	}
	err := app.Run(append([]string{"work"}, args...))
	return cfg, err
}

func TestLimitFlags(t *testing.T) {
	cfg, err := limitsConfigOf(t, "--queue-cost-budgets", " default=10, llm=3 ", "--group-cost-budgets", "openai=6")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"default": 10, "llm": 3}, cfg.QueueCostBudgets)
	require.Equal(t, map[string]int64{"openai": 6}, cfg.GroupCostBudgets)

	_, err = limitsConfigOf(t, "--queue-cost-budgets", "default=0")
	require.ErrorContains(t, err, `--queue-cost-budgets: "default=0": want name=units`)
	_, err = limitsConfigOf(t, "--group-cost-budgets", "openai")
	require.ErrorContains(t, err, "--group-cost-budgets")
}
