// Package queuety runs the jobs and durable workflows of Queuety, the
// WordPress plugin, from Go: straight from the MySQL or MariaDB tables the
// plugin writes, row for row as its PHP worker would, so Go and PHP workers
// can share one queue.
//
// # A client that dispatches
//
// Open connects to the plugin's tables (Config names the database, the
// table prefix, the queues and the worker's limits; Config.Validate fills
// in the defaults). A Client writes the rows PHP's dispatch() would write:
//
//	c, err := queuety.Open(ctx, queuety.Config{DSN: "root@tcp(127.0.0.1:3306)/wordpress"})
//	...
//	d, err := c.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"},
//		queuety.OnQueue("mail"), queuety.WithPriority(queuety.PriorityHigh))
//
// The same Client dispatches workflows built with the workflow package
// (Client.DispatchWorkflow), batches and chains, adds schedules, pauses
// queues, and reads jobs, workflows and workers back for operators.
//
// # A worker that runs
//
// A Registry maps handler names (the jobs.handler column: a PHP class name
// or any string) to Go handlers; jobs of other handlers stay in the queue
// for PHP workers, unless a fallback takes them (the PHP pool of the
// command line). Client.NewWorker builds a Worker over the registry; Run
// (or Start and Stop) claims and runs jobs until the context ends, then
// stops gracefully, handing back what it could not finish:
//
//	reg := queuety.NewRegistry()
//	reg.HandleFunc(`App\Jobs\SendEmail`, func(ctx context.Context, j *queuety.Job) error { … })
//	w, err := c.NewWorker(reg)
//	...
//	err = w.Run(ctx)
//
// Inside, a Worker is a few parts with their own state: the claimer (claim
// lanes that commit a claim before any handler starts), the executor (one
// attempt: its handler, time limit and panics, then retry or burial), the
// registry of running attempts that the heartbeater and the session agent
// read, the completer that writes completions in batches, and background
// services that rescue stale rows and run the workflow and schedule loops.
// Sites runs one Worker per WordPress site of a network or a list, sharing
// one idle look per database server.
//
// # Where the rest lives
//
//   - workflow: the model of Queuety's durable workflows and the Go
//     builder for them; Registry.RegisterStep gives a step class a Go
//     handler, and a worker with Config.Workflows runs the steps.
//   - queuety/machine: state machines, the plugin's StateMachine: the
//     builder Client.DispatchMachine takes, the Go actions and guards
//     Registry.RegisterStateAction and RegisterStateGuard take, and the
//     status views Client.Machine returns.
//   - internal/engine and internal/steps: the workflow engine and the
//     step kinds it runs, behind Client and Worker.
//   - sql: the storage layer over the plugin's tables.
//   - queuety/cli: the queuety command (work, status, workflows, sites,
//     the dashboard and the HTTP worker plane).
//   - queuety/queuetytest: helpers for testing handlers.
//
// The documentation is in the repository's docs directory: docs/go.md for
// this package's API, docs/config.md for every setting, docs/compat.md for
// what the plugin does and how this package matches it, and
// docs/architecture.md for how the parts fit.
package queuety
