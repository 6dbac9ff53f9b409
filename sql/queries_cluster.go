package store

// Query names of queries_cluster.sql.
const (
	qClusterDetect        = "cluster-detect"
	qClusterAdmissionLock = "cluster-admission-lock"
	qClusterLeaseCreate   = "cluster-lease-create"
	qClusterLeaseTake     = "cluster-lease-take"
	qClusterLeaseRelease  = "cluster-lease-release"
	qClusterSyncWait      = "cluster-sync-wait"
	qClaimSettle          = "claim-settle"
	qClaimWhichSlice      = "claim-which-slice"
	qClusterSlice         = "cluster-slice"
	qClusterLockOwner     = "cluster-lock-owner"
)
