package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// ObserveWebhook passes webhook results to the metrics
// (queuety.WebhookObserver).
func (o observer) ObserveWebhook(event, result string) { o.counters().ObserveWebhook(event, result) }

// webhookView is a webhooks row as `webhook list --json` prints it.
type webhookView struct {
	ID        int64  `json:"id"`
	Event     string `json:"event"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
}

func viewOfWebhook(w *queuety.WebhookRow) webhookView {
	return webhookView{ID: w.ID, Event: w.Event, URL: w.URL, CreatedAt: store.DateTime(w.CreatedAt)}
}

func (a *app) webhookCommand() *cli.Command {
	return &cli.Command{
		Name:  "webhook",
		Usage: "list, add and remove the webhooks work posts to (wp queuety webhook)",
		Description: `Webhooks are rows of the plugin's webhooks table: an event (job.completed,
job.failed, job.buried, workflow.failed) and a URL the worker POSTs a JSON body
{"event", "data", "timestamp"} to. The plugin's worker and ` + "`queuety work`" + ` both read
them; a running worker sees a change within --webhook-refresh.

   queuety webhook add job.buried https://ops.example.com/hooks/queuety
   queuety webhook list --json
   queuety webhook remove 3 --yes`,
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "registered webhooks, oldest first",
				Description: `   queuety webhook list
   queuety webhook list --json | jq '.[] | select(.event == "job.buried")'`,
				Flags: []cli.Flag{formatFlag(), jsonFlag()},
				Action: withClient(func(c *cli.Context) error { return checkFormat(c, true) }, func(c *cli.Context, client *queuety.Client) error {
					rows, err := client.Webhooks(c.Context)
					if err != nil {
						return err
					}
					views := make([]webhookView, len(rows))
					for i := range rows {
						views[i] = viewOfWebhook(&rows[i])
					}
					if f := c.String("format"); f != "table" && !c.Bool("json") {
						it := items{fields: []string{"id", "event", "url", "created_at"}}
						for _, v := range views {
							it.add(v.ID, v.Event, v.URL, v.CreatedAt)
						}
						return printItems(c, f, it)
					}
					if c.Bool("json") {
						return printJSON(c, views)
					}
					if len(views) == 0 {
						fmt.Fprintln(c.App.Writer, "No webhooks registered.")
						return nil
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tEVENT\tURL\tCREATED")
					for _, v := range views {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.ID, esc(v.Event), esc(v.URL), v.CreatedAt)
					}
					return tw.Flush()
				}),
			},
			{
				Name: "add", Usage: "register a URL for an event", ArgsUsage: "<event> <url>",
				Description: `The event is job.completed, job.failed, job.buried or workflow.failed; the URL
http or https.

   queuety webhook add job.failed https://ops.example.com/hooks/queuety`,
				Flags: []cli.Flag{jsonFlag()},
				Action: withClient(func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usagef("webhook add takes an event and a URL")
					}
					if err := queuety.CheckWebhook(c.Args().Get(0), c.Args().Get(1)); err != nil {
						return usageError{err}
					}
					return nil
				}, func(c *cli.Context, client *queuety.Client) error {
					event, url := c.Args().Get(0), c.Args().Get(1)
					id, err := client.AddWebhook(c.Context, event, url)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, map[string]any{"id": id, "event": event, "url": url})
					}
					fmt.Fprintf(c.App.Writer, "Webhook #%d registered for event '%s'.\n", id, esc(event))
					return nil
				}),
			},
			a.webhookRemoveCommand(),
		},
	}
}

func (a *app) webhookRemoveCommand() *cli.Command {
	var id int64
	return &cli.Command{
		Name: "remove", Usage: "delete a webhook", ArgsUsage: "<id>",
		Description: `Shows the webhook and deletes it with --yes, or after a "y" when run at a
terminal; --dry-run only shows it.

   queuety webhook remove 3 --dry-run
   queuety webhook remove 3 --yes`,
		Flags: append([]cli.Flag{jsonFlag()}, confirmFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if err := checkConfirmFlags(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usagef("webhook remove takes one webhook id")
			}
			if _, err := fmt.Sscanf(c.Args().First(), "%d", &id); err != nil || id < 1 || fmt.Sprint(id) != c.Args().First() {
				return usagef("%q is not a webhook id", c.Args().First())
			}
			return nil
		}, func(c *cli.Context, client *queuety.Client) error {
			w, err := client.Webhook(c.Context, id)
			if err != nil {
				return fmt.Errorf("webhook #%d: %w", id, err)
			}
			v := viewOfWebhook(w)
			what := fmt.Sprintf("webhook #%d (%s → %s)", v.ID, esc(v.Event), esc(v.URL))
			if c.Bool("dry-run") {
				if c.Bool("json") {
					return printJSON(c, map[string]any{"dry_run": true, "would_remove": v})
				}
				fmt.Fprintf(c.App.Writer, "Would remove %s.\n", what)
				return nil
			}
			if ok, err := a.confirm(c, "remove "+what); !ok {
				return err
			}
			if err := client.RemoveWebhook(c.Context, id); err != nil {
				return fmt.Errorf("webhook #%d: %w", id, err)
			}
			if c.Bool("json") {
				return printJSON(c, map[string]any{"removed": v})
			}
			fmt.Fprintf(c.App.Writer, "Webhook #%d removed.\n", id)
			return nil
		}),
	}
}

// webhookFlags tune the webhooks `work` sends.
func webhookFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-webhooks", EnvVars: []string{"QUEUETY_NO_WEBHOOKS"}, Usage: "send no webhooks (the plugin's webhooks table is not read)"},
		&cli.DurationFlag{Name: "webhook-timeout", Value: queuety.DefaultWebhookTimeout, EnvVars: []string{"QUEUETY_WEBHOOK_TIMEOUT"}, Usage: "time limit of one webhook request, connection included (the plugin's: 1s)"},
		&cli.IntFlag{Name: "webhook-retries", Value: queuety.DefaultWebhookRetries, EnvVars: []string{"QUEUETY_WEBHOOK_RETRIES"}, Usage: "more tries of a webhook request after a network error, a timeout, a 5xx or a 429 (0: none, as the plugin)"},
		&cli.IntFlag{Name: "webhook-queue", Value: queuety.DefaultWebhookQueue, EnvVars: []string{"QUEUETY_WEBHOOK_QUEUE"}, Usage: "webhook requests that may wait to be sent; past it new ones are dropped with a warning"},
		&cli.IntFlag{Name: "webhook-senders", Value: queuety.DefaultWebhookSenders, EnvVars: []string{"QUEUETY_WEBHOOK_SENDERS"}, Usage: "webhook requests in flight at once (1-256)"},
		&cli.DurationFlag{Name: "webhook-refresh", Value: queuety.DefaultWebhookRefresh, EnvVars: []string{"QUEUETY_WEBHOOK_REFRESH"}, Usage: "read the webhooks table again this often, to see webhooks added or removed (at least 1s)"},
	}
}

// webhookConfig applies the webhook flags to cfg.
func webhookConfig(c *cli.Context, cfg *queuety.Config) error {
	w := queuety.WebhookConfig{
		Disabled: c.Bool("no-webhooks"), Timeout: c.Duration("webhook-timeout"), Retries: c.Int("webhook-retries"),
		QueueSize: c.Int("webhook-queue"), Senders: c.Int("webhook-senders"), Refresh: c.Duration("webhook-refresh"),
	}
	switch {
	case w.Timeout <= 0:
		return usagef("--webhook-timeout %s: must be positive", w.Timeout)
	case w.Retries < 0:
		return usagef("--webhook-retries %d: must not be negative", w.Retries)
	case w.QueueSize < 1:
		return usagef("--webhook-queue %d: must be at least 1", w.QueueSize)
	case w.Senders < 1 || w.Senders > 256:
		return usagef("--webhook-senders %d: must be between 1 and 256", w.Senders)
	case w.Refresh < time.Second:
		return usagef("--webhook-refresh %s: must be at least 1s", w.Refresh)
	}
	if w.Retries == 0 {
		w.Retries = -1 // the flag's 0 means none; Config's 0 means the default
	}
	cfg.Webhooks = w
	return nil
}
