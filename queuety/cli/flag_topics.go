package cli

import (
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// The daemons' flags (work, serve, dev) are many: `work --help` groups
// them by topic, and each can be set from the environment, so a systemd
// unit or a container sets everything in one env file (deploy/queuety.env;
// the table of docs/config.md is generated from these definitions).

// daemonCommands are the commands whose every flag has a variable.
var daemonCommands = []string{"work", "serve", "dev"}

// Flag topics, in the order `work --help` lists them.
const (
	topicQueues    = "Queues and concurrency"
	topicClaims    = "Claiming and polling"
	topicTimeouts  = "Timeouts, retries and the stale sweep"
	topicWorkflows = "Workflows and schedules"
	topicRetention = "Retention"
	topicSessions  = "Worker registration and sessions"
	topicPHP       = "PHP pool"
	topicHTTP      = "HTTP API and dashboard"
	topicWebhooks  = "Webhooks"
	topicObserve   = "Metrics and logging"
	topicLimits    = "Run limits (cron, one-shot runs)"
	topicPlugin    = "wp queuety work compatibility"
	topicSites     = "Many sites (multisite network, site lists)"
	topicDemo      = "Demo"
)

// topicOrder is the order of the topics in docs/config.md.
var topicOrder = []string{topicQueues, topicClaims, topicTimeouts, topicWorkflows, topicRetention, topicSessions,
	topicPHP, topicHTTP, topicWebhooks, topicObserve, topicLimits, topicPlugin, topicSites, topicDemo}

// flagTopics files each daemon flag under a topic. A flag missing here is
// listed under "Other" (TestWorkHelpGroupedByTopic fails on it).
var flagTopics = map[string]string{
	"queue": topicQueues, "concurrency": topicQueues, "claim-all": topicQueues, "max-conns": topicQueues,
	"queue-cost-budgets": topicQueues, "group-cost-budgets": topicQueues,

	"claim-window": topicClaims, "claim-lanes": topicClaims, "poll-interval": topicClaims,
	"max-claim-batch": topicClaims, "step-batch": topicClaims, "chain-steps": topicClaims,
	"coordination": topicClaims, "claim-slices": topicClaims,

	"shutdown-grace": topicTimeouts, "stale-timeout": topicTimeouts, "heartbeat-interval": topicTimeouts,
	"rescue-schedule": topicTimeouts, "job-timeout": topicTimeouts, "backoff": topicTimeouts,
	"startup-wait": topicTimeouts,

	"workflows": topicWorkflows, "no-workflows": topicWorkflows, "wait-sweep-interval": topicWorkflows,
	"signal-poll-interval": topicWorkflows, "deadline-interval": topicWorkflows, "schedule-interval": topicWorkflows,
	"max-for-each-items": topicWorkflows, "for-each-page": topicWorkflows,

	"retention-days": topicRetention, "log-retention-days": topicRetention, "buried-retention-days": topicRetention,
	"retention-schedule": topicRetention,

	"worker-id": topicSessions, "capability": topicSessions, "max-worker-sessions": topicSessions,
	"worker-stale-after": topicSessions, "namespace": topicSessions,

	"php": topicPHP, "php-workers": topicPHP, "php-max-jobs": topicPHP, "php-max-memory": topicPHP,
	"php-memory-limit": topicPHP,

	"http": topicHTTP, "listen": topicHTTP, "worker-token": topicHTTP, "operator-token": topicHTTP,
	"insecure-no-auth": topicHTTP, "max-body-bytes": topicHTTP, "poll-timeout": topicHTTP,
	"no-ui": topicHTTP, "ui-read-only": topicHTTP,

	"no-webhooks": topicWebhooks, "webhook-timeout": topicWebhooks, "webhook-retries": topicWebhooks,
	"webhook-queue": topicWebhooks, "webhook-senders": topicWebhooks, "webhook-refresh": topicWebhooks,

	"metrics-listen": topicObserve, "debug": topicObserve, "json": topicObserve,

	"once": topicLimits, "max-jobs": topicLimits, "max-time": topicLimits, "stop-when-empty": topicLimits,

	"workers": topicPlugin, "min-workers": topicPlugin, "max-workers": topicPlugin,

	"network": topicSites, "sites": topicSites, "sites-reread": topicSites, "php-pools": topicSites, "php-idle": topicSites, "php-share": topicSites,
	"conns-per-server": topicSites, "metrics-max-sites": topicSites, "max-slots": topicSites, "idle-look-interval": topicSites,

	"demo-jobs": topicDemo, "exit-when-drained": topicDemo, "yes": topicDemo, "demo-workflows": topicDemo,
}

// topicOther is the topic of a flag flagTopics lacks.
const topicOther = "Other"

// flagEnvOverrides name the variable of a flag whose derived name
// (QUEUETY_ and the flag's name) would be ambiguous: dev's --yes and
// --listen are not serve's or a confirmation's.
var flagEnvOverrides = map[string]string{
	"dev/yes":    "QUEUETY_DEV_YES",
	"dev/listen": "QUEUETY_DEV_LISTEN",
}

// flagEnv is the variable a daemon flag gets when its definition names
// none: QUEUETY_ and its name in capitals, dashes as underscores.
func flagEnv(cmd, name string) string {
	if v, ok := flagEnvOverrides[cmd+"/"+name]; ok {
		return v
	}
	return "QUEUETY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// topicsAndEnv files the flags of work, serve and dev under their topics
// and gives each flag without a variable its derived one. The flags are
// fresh values each New (they hold parse state), so setting them is safe.
func topicsAndEnv(cmds []*cli.Command) {
	for _, cmd := range cmds {
		if !slices.Contains(daemonCommands, cmd.Name) {
			continue
		}
		for _, f := range cmd.Flags {
			v := reflect.ValueOf(f)
			if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
				continue
			}
			s := v.Elem()
			name := f.Names()[0]
			if cat := s.FieldByName("Category"); cat.IsValid() && cat.CanSet() && cat.String() == "" {
				topic, ok := flagTopics[name]
				if !ok {
					topic = topicOther
				}
				cat.SetString(topic)
			}
			if env := s.FieldByName("EnvVars"); env.IsValid() && env.CanSet() && env.Len() == 0 {
				env.Set(reflect.ValueOf([]string{flagEnv(cmd.Name, name)}))
			}
		}
	}
}
