package store

// Named query of release.go (queries.sql).
const (
	qReleaseJobLater = "release-job-later"
)
