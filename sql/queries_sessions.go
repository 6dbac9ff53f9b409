package store

// Query names of queries_sessions.sql.
const (
	qUpsertWorker              = "upsert-worker"
	qGetWorker                 = "get-worker"
	qLockWorker                = "lock-worker"
	qListWorkers               = "list-workers"
	qHeartbeatWorker           = "heartbeat-worker"
	qDeleteWorker              = "delete-worker"
	qLockWorkerSession         = "lock-worker-session"
	qListWorkerSessions        = "list-worker-sessions"
	qInsertWorkerSession       = "insert-worker-session"
	qUpdateWorkerSession       = "update-worker-session"
	qCountWorkerLeasedSessions = "count-worker-leased-sessions"
	qCountSessionActivities    = "count-session-activities"
	qActiveWorkerSessionIDs    = "active-worker-session-ids"
	qHeldWorkerSessionIDs      = "held-worker-session-ids"
	qWorkerSessionMetrics      = "worker-session-metrics"
)
