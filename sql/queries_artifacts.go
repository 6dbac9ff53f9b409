package store

// Query names of queries_artifacts.sql (listing a workflow's artifacts).
const (
	qArtifactsOf = "artifacts-of"
)
