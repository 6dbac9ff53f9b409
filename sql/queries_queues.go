package store

// Query names of queries_queues.sql.
const (
	qPendingHandlers = "pending-handlers"
	qPauseQueue      = "pause-queue"
	qResumeQueue     = "resume-queue"
	qPausedQueues    = "paused-queues"
	qStats           = "stats"
)
