// Package phppool runs Queuety jobs in a supervised pool of long-lived PHP
// processes, the PHP half of which is php-bridge/bin/queuety-php-worker. A
// Pool is a queuety.Handler; installed with Registry.SetFallback it runs
// every job whose handler has no Go implementation.
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
//	child  → {"type":"heartbeat","seq":7,"progress":{…}}                 any number, from Heartbeat::beat()
//	child  → {"type":"result","seq":7,"ok":true,"memory":2097152}
//	child  → {"type":"result","seq":7,"ok":false,"error":{"class":…,"message":…,"trace":…},"memory":…}
//
// One request is in flight per process. The payload is the job's payload
// without Queuety's reserved keys, encoded with PHP's json_encode rules
// (internal/phpjson), so PHP decodes exactly what the plugin would have
// handed the handler. Closing stdin asks the child to exit.
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
