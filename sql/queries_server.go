package store

// Query names of queries_server.sql.
const (
	qServerVersion   = "server-version"
	qServerProcess   = "server-process"
	qServerUTCOffset = "server-utc-offset"
	qColumnExists    = "column-exists"
	qIndexExists     = "index-exists"
	qTableExists     = "table-exists"
)
