package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The shipped rules and dashboard (deploy/), from this package's directory.
var (
	alertsFile     = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml")
	alertsTestFile = filepath.Join("..", "..", "deploy", "prometheus", "alerts_test.yml")
	grafanaFile    = filepath.Join("..", "..", "deploy", "grafana", "queuety.json")
)

// promtool runs promtool (Debian's prometheus package; scripts/test.sh
// installs it through scripts/ensure-promtool.sh) and fails on a non-zero
// exit.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed to check deploy/prometheus: run scripts/ensure-promtool.sh (apt-get install prometheus)")
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// alerts.yml is valid and its unit tests (alerts_test.yml) pass.
func TestAlertRulesPromtool(t *testing.T) {
	t.Parallel()
	require.Contains(t, promtool(t, "check", "rules", alertsFile), "SUCCESS")
	require.Contains(t, promtool(t, "test", "rules", alertsTestFile), "SUCCESS")
}

// servedNames is every sample name a daemon's registry exports, with each
// optional part (worker slots, PHP pool, webhooks, the worker's counters)
// switched on.
func servedNames(t *testing.T) map[string]bool {
	t.Helper()
	m := New(Config{
		Tables: &fixedTables{Snapshot{Jobs: []JobCount{{Queue: "q", Status: "pending", N: 1}}, Completions: []QueueCount{{Queue: "q", N: 1}},
			Activities: []ActivityCount{{Mode: "local", State: "completed", N: 1}}}},
		Slots: fixedSlots{}, Pool: fixedPool{PoolStats{Slots: 1, Processes: 1}},
	})
	m.ObserveJob("q", "h", "completed", time.Millisecond)
	m.ObserveClaim(time.Millisecond, 1)
	m.ObserveWebhook("job.completed", "sent")
	m.ObserveQueueWait("q", time.Second)
	m.ObserveRescue(1, 1)
	m.ObserveRetention("ok", map[string]int{"jobs": 1})
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		n := f.GetName()
		names[n] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n+"_sum"], names[n+"_count"] = true, true
		}
	}
	return names
}

type fixedSlots struct{}

func (fixedSlots) Slots() (int, int) { return 1, 2 }

var (
	// PromQL words that are not metric names: keywords, and the
	// functions and aggregations (followed by "(", found separately).
	promqlWords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}
	// Label lists after these words are label names, not metrics.
	promqlLabelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlStrings    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers   = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges     = regexp.MustCompile(`\[[^\]]*\]`)
	grafanaVars      = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promqlIdent      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	grafanaLabelFunc = regexp.MustCompile(`^\s*(label_values|metrics|query_result)\s*\(`)
)

// metricNames returns the metric names an expression reads: identifiers
// that are not in a string, a label matcher, a range, a by/on list, a
// function call or a keyword, nor a number.
func metricNames(expr string) []string {
	if m := grafanaLabelFunc.FindStringIndex(expr); m != nil {
		// label_values(metric, label): the first argument is a metric.
		inner := strings.TrimSuffix(strings.TrimSpace(expr[m[1]:]), ")")
		first, _, _ := strings.Cut(inner, ",")
		expr = first
	}
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = grafanaVars.ReplaceAllString(expr, " ")
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlRanges.ReplaceAllString(expr, " ")
	expr = promqlLabelLists.ReplaceAllString(expr, " ")
	var out []string
	for _, tok := range promqlIdent.FindAllString(expr, -1) {
		if strings.HasSuffix(tok, "(") {
			continue
		}
		tok = strings.TrimSpace(tok)
		if slices.Contains(promqlWords, strings.ToLower(tok)) {
			continue
		}
		out = append(out, tok)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"queuety_jobs", "queuety_queue_paused"},
		metricNames(`max by (queue) (queuety_jobs{status="pending", queue=~"$queue"}[5m]) > 0 unless on (queue) queuety_queue_paused == 1`))
	require.Equal(t, []string{"queuety_log_completions_total"},
		metricNames(`histogram_quantile(0.95, sum by (le) (rate(queuety_log_completions_total{a="b}"}[$__rate_interval]))) * 60`))
	require.Equal(t, []string{"queuety_jobs"}, metricNames(`label_values(queuety_jobs, queue)`))
	require.Equal(t, []string{"time_spent"}, metricNames(`time() - time_spent`))
}

// Every query of the Grafana dashboard (panel targets and template
// variables) names only metrics a daemon serves, and names at least one.
func TestGrafanaQueriesNameServedMetrics(t *testing.T) {
	t.Parallel()
	served := servedNames(t)
	raw, err := os.ReadFile(grafanaFile)
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	type query struct{ where, expr string }
	var queries []query
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			queries = append(queries, query{"panel " + p.Title, tg.Expr})
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		queries = append(queries, query{"variable " + v.Name, s})
	}
	require.Greater(t, len(queries), 20)
	for _, q := range queries {
		names := metricNames(q.expr)
		require.NotEmpty(t, names, "%s: %q names no metric", q.where, q.expr)
		for _, n := range names {
			require.True(t, served[n], "%s: %q reads %s, which the daemon does not serve", q.where, q.expr, n)
		}
	}
}

// The alerting and recording rules, too, read only served metrics (or the
// rules' own recorded series).
func TestAlertRulesNameServedMetrics(t *testing.T) {
	t.Parallel()
	served := servedNames(t)
	raw, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	recorded := map[string]bool{}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Record != "" {
				recorded[r.Record] = true
			}
			names := metricNames(r.Expr)
			require.NotEmpty(t, names, "%s%s", r.Alert, r.Record)
			for _, m := range names {
				require.True(t, served[m] || recorded[m], "rule %s%s reads %s, which the daemon does not serve", r.Alert, r.Record, m)
			}
		}
	}
	require.GreaterOrEqual(t, n, 8)
}
