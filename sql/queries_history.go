package store

// Query names of queries_history.sql (workflow state-at, rewind, fork and
// replay).
const (
	qHsStateAtStep              = "hs-state-at-step"
	qHsRewindWorkflow           = "hs-rewind-workflow"
	qHsSupersedeJobs            = "hs-supersede-jobs"
	qHsInsertFork               = "hs-insert-fork"
	qHsInsertReplayedWorkflow   = "hs-insert-replayed-workflow"
	qHsInsertReplayedEvent      = "hs-insert-replayed-event"
	qHsInsertReplayedLog        = "hs-insert-replayed-log"
	qHsInsertReplayedSignal     = "hs-insert-replayed-signal"
	qHsInsertReplayedDependency = "hs-insert-replayed-dependency"
	qHsInsertReplayedArtifact   = "hs-insert-replayed-artifact"
	qHsInsertReplayedChunk      = "hs-insert-replayed-chunk"
	qHsInsertReplayMarker       = "hs-insert-replay-marker"
)
