package store

// Query names of queries_machines.sql.
const (
	qLockMachine              = "lock-machine"
	qGetMachine               = "get-machine"
	qListMachines             = "list-machines"
	qUpdateMachine            = "update-machine"
	qFailMachine              = "fail-machine"
	qInsertMachineEvent       = "insert-machine-event"
	qMachineEvents            = "machine-events"
	qInsertMachineActionJob   = "insert-machine-action-job"
	qMachineSavepoint         = "machine-savepoint"
	qInsertMachine            = "insert-machine"
	qFindMachineByKey         = "find-machine-by-key"
	qMachineRollbackSavepoint = "machine-rollback-savepoint"
)
