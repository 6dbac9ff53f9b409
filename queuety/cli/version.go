package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Version, when set at link time (-ldflags "-X
// github.com/queuety-go/queuety/queuety/cli.Version=v1.2.3"), is what
// `queuety version` and `queuety --version` print; otherwise the module
// version Go recorded. scripts/release.sh sets it from `git describe`.
var Version string

// Commit, when set at link time, is the commit `queuety version` names.
// Release builds set it because they build with -buildvcs=false in CI
// checkouts where Go cannot always read the VCS stamp.
var Commit string

// BuildInfo is what `queuety version` prints.
type BuildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	CommitAt  string `json:"commit_time,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a work tree with changes
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// ReadBuildInfo reads the binary's version, VCS commit and Go version.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			b.Version = v
		}
		if info.GoVersion != "" {
			b.GoVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.CommitAt = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		b.Version = Version
	}
	if Commit != "" {
		b.Commit = Commit
	}
	return b
}

func (a *app) versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit and Go version of this binary",
		Description: `Prints what the binary was built from: its version (the module version, or
the one set with -ldflags "-X github.com/queuety-go/queuety/queuety/cli.Version=v1.2.3"),
the VCS commit and its time (with "modified" when the work tree had changes),
and the Go version. Needs no database.

   queuety version
   queuety version --json`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments")
			}
			return printVersion(c, c.Bool("json"))
		},
	}
}

// printVersion prints the build (queuety version, queuety --version).
func printVersion(c *cli.Context, asJSON bool) error {
	b := ReadBuildInfo()
	if asJSON {
		return printJSON(c, b)
	}
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	}
	if b.Modified {
		commit += " (modified)"
	}
	if b.CommitAt != "" {
		commit += ", " + b.CommitAt
	}
	fmt.Fprintf(c.App.Writer, "queuety %s\ncommit %s\n%s %s\n", b.Version, commit, b.GoVersion, b.Platform)
	return nil
}
