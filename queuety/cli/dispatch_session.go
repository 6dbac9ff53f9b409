package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// sessionDispatchOption turns dispatch's --session-* flags into the
// InWorkerSession option (nil when none is set). The flag named in errors
// is --session-id, which the options belong to.
func sessionDispatchOption(c *cli.Context) (queuety.DispatchOption, string, error) {
	others := []string{"session-queue", "session-requirement", "session-lease", "session-ttl"}
	if !c.IsSet("session-id") {
		for _, f := range others {
			if c.IsSet(f) {
				return nil, "", usagef("--%s needs --session-id", f)
			}
		}
		return nil, "", nil
	}
	// A set flag counts even when it is 0 or blank, so the library's
	// validation message reports it instead of the default applying.
	opts := workflow.WorkerSessionOptions{
		Queue:        c.String("session-queue"),
		Requirements: c.StringSlice("session-requirement"),
		LeaseSeconds: c.Int("session-lease"),
		TTLSeconds:   c.Int("session-ttl"),
	}
	for _, f := range []struct {
		name string
		set  bool
		msg  string
	}{
		{"session-queue", c.IsSet("session-queue") && opts.Queue == "", "Worker session queue must be a non-empty string."},
		{"session-lease", c.IsSet("session-lease") && opts.LeaseSeconds == 0, "Worker session leaseSeconds must be a positive integer."},
		{"session-ttl", c.IsSet("session-ttl") && opts.TTLSeconds == 0, "Worker session ttlSeconds must be a positive integer."},
	} {
		if f.set {
			return nil, "", usagef("--%s: %s", f.name, f.msg)
		}
	}
	return queuety.InWorkerSession(c.String("session-id"), opts), "session-id", nil
}
