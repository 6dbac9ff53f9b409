package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/wpconfig"
	"github.com/queuety-go/queuety/queuety"
)

// limitFlags are work's flags for the plugin's debug rows and cost
// budgets (QUEUETY_DEBUG, QUEUETY_RESOURCE_QUEUE/GROUP_COST_BUDGETS).
func limitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "debug", EnvVars: []string{"QUEUETY_DEBUG"}, Usage: "write the plugin's QUEUETY_DEBUG rows (log event debug, handler _worker) for every claim, deferral and rate limit"},
		&cli.StringFlag{Name: "queue-cost-budgets", EnvVars: []string{"QUEUETY_RESOURCE_QUEUE_COST_BUDGETS"}, DefaultText: "wp-config's QUEUETY_RESOURCE_QUEUE_COST_BUDGETS", Usage: "most cost_units each queue's processing jobs may add up to, e.g. default=10,llm=3"},
		&cli.StringFlag{Name: "group-cost-budgets", EnvVars: []string{"QUEUETY_RESOURCE_GROUP_COST_BUDGETS"}, DefaultText: "wp-config's QUEUETY_RESOURCE_GROUP_COST_BUDGETS", Usage: "most cost_units each concurrency group's processing jobs may add up to, e.g. openai=6"},
	}
}

// limitsConfig applies the debug and budget flags; a budget flag left unset
// takes the --wp-config constant of the same name.
func limitsConfig(c *cli.Context, cfg *queuety.Config) error {
	cfg.Debug = c.Bool("debug")
	var site *wpconfig.Settings
	if path := c.String("wp-config"); path != "" && (!c.IsSet("queue-cost-budgets") || !c.IsSet("group-cost-budgets")) {
		s, err := wpconfig.ParseFile(path)
		if err != nil {
			return usageError{fmt.Errorf("--wp-config: %w", err)}
		}
		site = &s
	}
	for _, b := range []struct {
		flag, constant string
		dst            *map[string]int64
	}{
		{"queue-cost-budgets", "QUEUETY_RESOURCE_QUEUE_COST_BUDGETS", &cfg.QueueCostBudgets},
		{"group-cost-budgets", "QUEUETY_RESOURCE_GROUP_COST_BUDGETS", &cfg.GroupCostBudgets},
	} {
		if c.IsSet(b.flag) {
			m, err := parseBudgets(c.String(b.flag))
			if err != nil {
				return usagef("--%s: %v", b.flag, err)
			}
			*b.dst = m
			continue
		}
		if site != nil {
			m, _, err := site.IntMap(b.constant)
			if err != nil {
				return usageError{fmt.Errorf("--wp-config: %w", err)}
			}
			*b.dst = m
		}
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
