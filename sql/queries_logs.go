package store

// Query names of queries_logs.sql.
const (
	qLogsByJob        = "logs-by-job"
	qLogsByWorkflow   = "logs-by-workflow"
	qLogsByHandler    = "logs-by-handler"
	qLogsByEvent      = "logs-by-event"
	qLogsSince        = "logs-since"
	qLogsHandlerStats = "logs-handler-stats"
	qLogsP95Count     = "logs-p95-count"
	qLogsP95Pick      = "logs-p95-pick"
)
