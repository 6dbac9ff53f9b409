package store

// Query names of queries_dispatch.sql.
const (
	qFindUniqueJob   = "find-unique-job"
	qInsertJob       = "insert-job"
	qAutoincSettings = "autoinc-settings"
	qInsertJobsBulk  = "insert-jobs-bulk"
)
