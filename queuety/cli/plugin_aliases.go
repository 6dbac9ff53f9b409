package cli

import (
	"slices"

	"github.com/urfave/cli/v2"
)

// pluginJobCommands are the plugin's top-level job commands, which queuety
// keeps under `job`.
var pluginJobCommands = []string{"list", "inspect", "retry", "retry-buried", "bury", "delete"}

// pluginAliasCommands are `queuety list`, `inspect`, `retry`,
// `retry-buried`, `bury` and `delete`: the job commands under the names
// `wp queuety` gives them, so its scripts run unchanged. They are hidden
// from the help, which lists them under job. Each is a fresh copy (flags
// hold parse state).
func (a *app) pluginAliasCommands() []*cli.Command {
	var out []*cli.Command
	for _, sub := range a.jobCommand().Subcommands {
		if slices.Contains(pluginJobCommands, sub.Name) {
			sub.Hidden = true
			sub.Usage += " (as job " + sub.Name + ")"
			out = append(out, sub)
		}
	}
	return out
}
