// Package phppool runs Queuety jobs in a supervised pool of long-lived PHP
// processes, the PHP half of which is php-bridge/bin/queuety-php-worker. A
// Pool is a queuety.Handler; installed with Registry.SetFallback it runs
// every job whose handler has no Go implementation. It is also the
// workflow engine's StepRunner (internal/engine): with the worker's workflow engine on, the workflow
// steps whose class has no Go step handler run here too (HandleStep, HandleItem),
// and so do the reducers, repeat conditions and compensations without a Go
// implementation (the engine's CallableRunner: RunReducer, RunCondition,
// RunCompensation).
//
// # Protocol
//
// Every message is a frame: a 4-byte big-endian length, then that many bytes
// of one JSON object (at most MaxFrameSize). The daemon writes requests to
// the child's stdin; the child answers on file descriptor 3, a pipe of its
// own, so whatever application code prints to stdout or stderr (both go to
// the daemon's log, line by line) can never corrupt a frame.
//
//	child  → {"type":"ready","protocol":1,"pid":1234,"php":"8.2.36"}     once, after the bootstrap loaded
//	daemon → {"type":"run","seq":7,"job":{"id":…,"handler":…,"queue":…,"attempt":…,"max_attempts":…,"priority":…},"payload":{…}}
//	daemon → {"type":"run","seq":8,"kind":"step","job":{…},"state":{…}}                               a workflow step
//	daemon → {"type":"run","seq":9,"kind":"item","job":{…},"state":{…},"item":…,"item_index":2}      a for_each branch
//	daemon → {"type":"run","seq":10,"kind":"reducer","class":…,"state":{…},"aggregate":{…},"payload":{…}}  a for_each reducer
//	daemon → {"type":"run","seq":11,"kind":"condition","class":…,"state":{…},"payload":{…}}       a repeat condition
//	daemon → {"type":"run","seq":12,"kind":"compensation","class":…,"state":{…},"payload":{…}}    a compensation, on_cancel, on_deadline
//	daemon → {"type":"run","seq":13,"kind":"metadata","class":…}                                     a class's config() and attributes (metadata.go)
//	daemon → {"type":"run","seq":13,"kind":"call","class":…,"method":…,"args":[…],"options":{…}}  a batch callback, chain catch, state action or guard
//	child  → {"type":"heartbeat","seq":7,"progress":{…}}                 any number, from Heartbeat::beat()
//	child  → {"type":"result","seq":7,"ok":true,"memory":2097152}        plus "output":{…} from a Step
//	child  → {"type":"result","seq":7,"ok":false,"error":{"class":…,"message":…,"trace":…},"memory":…}
//	child  → {"type":"result","seq":7,"ok":false,"error":{…},"retry":{"max_attempts":1,"backoff":30},"memory":…}  a Contracts\Job
//
// One request is in flight per process. The payload is the job's payload
// without Queuety's reserved keys, encoded with PHP's json_encode rules
// (internal/phpjson), so PHP decodes exactly what the plugin would have
// handed the handler. A request without "kind" (or "job") runs a plain
// job's handler with the payload. Kind "step" calls the class's
// Step::handle(state) with the full workflow state (reserved "_" keys
// included, as the plugin's worker passes it); kind "item" calls
// ForEachHandler::handle_item(state, item, item_index), or handle(state)
// for a class that is only a Step. The state and item are the engine's
// phpjson bytes; the result's "output" is the returned array, which the
// engine merges as advance_step does. Kinds "reducer", "condition" and
// "compensation" (no "job") call a workflow's PHP callable that has no Go
// implementation, as the engine's CallableRunner, with the
// plugin's arguments: ForEachReducer::reduce(state, aggregate),
// RepeatCondition::matches(state) and Compensation::handle(state) (also
// on_cancel and on_deadline handlers), the payload appended when it is not
// empty ("[]"); "state" is the public state (for a reducer with the
// aggregate under its result key; for a compensation its snapshot). The
// "output" is the reducer's array, {"matches":bool} for a condition and
// nothing for a compensation; an unknown compensation class is skipped, as
// the plugin skips it. Heartbeats of steps are not stored
// (the plugin has no heartbeat row for them either). Closing stdin asks
// the child to exit.
//
// A step's "job" also names its "workflow_id" and "step_index" (the
// plugin's ExecutionContext on the PHP side). A step's "output" may carry
// "_queuety_trace" (trace_*() calls, artifacts put, a streaming step's
// chunks), which the engine writes on the step_completed event. A plain
// job whose class is a Contracts\Job runs as the plugin's worker runs it;
// its failure carries "retry": the class's $tries ("max_attempts") and the
// $backoff entry for the attempt ("backoff", seconds), each only when
// declared, which decide the bury and the delay (queuety.AttemptSettings).
//
// # Supervision
//
// A process that exits or dies mid-job fails that job with a
// Queuety\Bridge\WorkerCrashed error and is replaced, with backoff; after
// Config.MaxCrashes crashes within Config.CrashWindow the pool gives up
// (Done is closed, Handle fails) rather than spin. A job whose context ends
// (time limit, shutdown, lost row) has its process killed, since PHP cannot
// be interrupted safely mid-handler; a fresh one takes its place. Processes
// are recycled after MaxJobs jobs or once they report more than
// MaxMemoryMB, as Queuety's own worker does.
package phppool
