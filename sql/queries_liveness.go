package store

// Query names of queries_liveness.sql.
const (
	qHeartbeat         = "heartbeat"
	qHeartbeatProgress = "heartbeat-progress"
	qAttemptHeld       = "attempt-held"
	qTouchJobs         = "touch-jobs"
	qOwnedJobs         = "owned-jobs"
	qFindStale         = "find-stale"
)
