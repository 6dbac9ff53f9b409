package store

// Query names of queries_fleet.sql (who claims what in a mixed fleet).
const (
	qFleetSetClaims   = "fleet-set-claims"
	qFleetLiveWorkers = "fleet-live-workers"
	qFleetPending     = "fleet-pending"
	qFleetPHPSeen     = "fleet-php-seen"
)
