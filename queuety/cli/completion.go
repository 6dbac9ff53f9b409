package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion is urfave/cli's own: the app answers a command line
// ending in --generate-bash-completion with the words that may follow
// (commands, subcommands, or flags after a "-"); these scripts ask it.

const bashCompletion = `# bash completion for %[1]s; load with: source <(%[1]s completion bash)
_%[2]s_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _%[2]s_complete %[1]s
`

const zshCompletion = `#compdef %[1]s
# zsh completion for %[1]s; load with: source <(%[1]s completion zsh)
_%[2]s_complete() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _%[2]s_complete %[1]s
`

func (a *app) completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes queuety's commands, subcommands and flags:

   source <(queuety completion bash)        # in ~/.bashrc
   source <(queuety completion zsh)         # in ~/.zshrc (after compinit)
   queuety completion fish > ~/.config/fish/completions/queuety.fish
   queuety completion bash > /etc/bash_completion.d/queuety`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion: name one shell: bash, zsh or fish")
			}
			name := c.App.Name
			fn := strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, name)
			switch c.Args().First() {
			case "bash":
				fmt.Fprintf(c.App.Writer, bashCompletion, name, fn)
			case "zsh":
				fmt.Fprintf(c.App.Writer, zshCompletion, name, fn)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				fmt.Fprint(c.App.Writer, s)
			default:
				return usagef("completion %q: want bash, zsh or fish", c.Args().First())
			}
			return nil
		},
	}
}
