package store

// Query names of queries_batches.sql.
const (
	qLockBatch               = "lock-batch"
	qGetBatch                = "get-batch"
	qBatchCompletion         = "batch-completion"
	qBatchCompletionFinished = "batch-completion-finished"
	qBatchFailure            = "batch-failure"
	qBatchFailureFinished    = "batch-failure-finished"
	qClaimWhichBatchesGo     = "claim-which-batches-go"
	qClaimWhichChainCatchGo  = "claim-which-chain-catch-go"
	qCancelBatch             = "cancel-batch"
	qInsertBatch             = "insert-batch"
)
