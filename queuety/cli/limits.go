package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// limitFlags are work's flags for the plugin's cost budgets
// (QUEUETY_RESOURCE_QUEUE/GROUP_COST_BUDGETS; QUEUETY_DEBUG is debugFlag).
func limitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "queue-cost-budgets", EnvVars: []string{"QUEUETY_RESOURCE_QUEUE_COST_BUDGETS"}, DefaultText: "wp-config's QUEUETY_RESOURCE_QUEUE_COST_BUDGETS", Usage: "most cost_units each queue's processing jobs may add up to, e.g. default=10,llm=3"},
		&cli.StringFlag{Name: "group-cost-budgets", EnvVars: []string{"QUEUETY_RESOURCE_GROUP_COST_BUDGETS"}, DefaultText: "wp-config's QUEUETY_RESOURCE_GROUP_COST_BUDGETS", Usage: "most cost_units each concurrency group's processing jobs may add up to, e.g. openai=6"},
	}
}

// limitsConfig applies the budget flags. A wp-config define of the same
// name reaches them through the site settings (site_settings.go), so the
// order is flag, environment, define.
func limitsConfig(c *cli.Context, cfg *queuety.Config) error {
	for _, b := range []struct {
		flag string
		dst  *map[string]int64
	}{
		{"queue-cost-budgets", &cfg.QueueCostBudgets},
		{"group-cost-budgets", &cfg.GroupCostBudgets},
	} {
		if c.String(b.flag) == "" {
			continue
		}
		m, err := parseBudgets(c.String(b.flag))
		if err != nil {
			return usagef("--%s: %v", b.flag, err)
		}
		*b.dst = m
	}
	return nil
}

// parseBudgets reads name=units pairs separated by commas.
func parseBudgets(s string) (map[string]int64, error) {
	m := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, units, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		n, err := strconv.ParseInt(strings.TrimSpace(units), 10, 64)
		if !ok || name == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want name=units with units at least 1, e.g. default=10,llm=3", part)
		}
		m[name] = n
	}
	return m, nil
}
