package store

// Query names of queries_claim.sql.
const (
	qClaimJobs          = "claim-jobs"
	qSessionCandidates  = "claim-session-candidates"
	qLockSessionJobs    = "lock-session-jobs"
	qAnyDue             = "any-due"
	qClaimWhichPlain    = "claim-which-plain"
	qClaimWhichHandlers = "claim-which-plain-handlers"
	qClaimWhichSteps    = "claim-which-steps"
	qClaimWhichAllSteps = "claim-which-all-steps"
	qClaimSkipGroups    = "claim-which-skip-groups"
	qProcessingByGroup  = "processing-by-group"
	qGetGroupLock       = "get-group-lock"
	qReleaseGroupLock   = "release-group-lock"
	qGroupLockHolder    = "group-lock-holder"
	qClaimRunning       = "claim-running"
	qClaimBury          = "claim-bury"
)
