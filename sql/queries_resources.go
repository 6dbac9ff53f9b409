package store

// Query names of queries_resources.sql.
const (
	qHandlerResourceProfile = "handler-resource-profile"
)
