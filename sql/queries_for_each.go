package store

// Query names of queries_for_each.sql (for_each.go).
const (
	qLockForEachPlan      = "lock-for-each-plan"
	qSaveForEachPlan      = "save-for-each-plan"
	qDeleteForEachPlan    = "delete-for-each-plan"
	qLockWorkflowPosition = "lock-workflow-position"

	qRenewForEachLease        = "renew-for-each-lease"
	qDeleteForEachPlansOf     = "delete-for-each-plans-of-workflow"
	qDeleteOrphanForEachPlans = "delete-orphan-for-each-plans"
	qOrphanForEachPlansWhere  = "orphan-for-each-plans-where"
	qAnyOrphanForEachPlan     = "any-orphan-for-each-plan"
)
