// Package engine runs Queuety's durable workflows on the plugin's tables:
// it runs claimed workflow step jobs (Go step handlers, the PHP pool's
// StepRunner, and the __queuety_* placeholders of the step kinds) and
// settles each one in the step-completion transaction of Queuety's
// Workflow::advance_step (spec §3.3), all SQL going through the store's
// WorkflowTx. The model it runs (State, Step, the builder, the handler
// types and the status and error types users see) is package workflow,
// which never imports this one.
//
// The package is also the step kinds' plug-in interface: Kind and its
// hooks (kind.go), Advance, the step transaction a kind acts through
// (advance.go), and Run, a claimed placeholder job (kind.go). The kinds
// themselves live in internal/steps, one file each; the composition root
// (package queuety) gives them to NewEngine (EngineConfig.Kinds). So are
// StepRunner and CallableRunner (step_runner.go), which run the step
// bodies and callables without Go code: the PHP pool
// (queuety/internal/phppool) implements them, and the composition root
// finds them on the registry's fallback handler (EngineConfig.Runner).
//
// It is internal, Temporal's way rather than River's public riverdriver:
// the step kinds are a closed set mirrored from the PHP plugin's step
// types (a new kind needs the plugin to write it), so nobody outside this
// module has a kind to plug in, and a public plug-in interface would put
// Advance, Run and the engine's accessors (about 130 names) back beside
// the user's API for no user. Users reach the engine through queuety's
// Client and Worker; the types those return are workflow's.
//
// The files, one topic each: engine.go (the engine and its
// configuration), engine_run.go (running a claimed job, the worker's part
// of Worker::process_job), advance.go (the step transaction: the guards
// and finalize_step_completion), kind.go (the kinds' interface),
// engine_fail.go (step failures and Workflow::fail), engine_state.go
// (merge, pruning, compensation snapshots, budgets), engine_events.go
// (logs and workflow_events rows), engine_lifecycle.go (cancel, pause,
// resume, retry), engine_deadline.go, engine_stale.go, engine_wait*.go and
// engine_signal.go (waits and signals), engine_terminal.go (what follows a
// workflow's end), engine_status*.go and engine_history.go (status,
// timeline, export, artifacts, rewind, fork, replay), step_batch.go (group
// commit), chain.go (running the next step without a claim) and
// local_activity*.go (local activities' runtime).
package engine
