package store

// Query names of queries_limits.sql.
const (
	qClaimSkipHandlers   = "claim-which-skip-handlers"
	qClaimSkipIDs        = "claim-which-skip-ids"
	qRateLimitUsed       = "rate-limit-used"
	qQueueCostProcessing = "queue-cost-processing"
	qGroupCostProcessing = "group-cost-processing"
)
