package store

// Query names of queries_schedules.sql.
const (
	qSchedulesList       = "schedules-list"
	qSchedulesFind       = "schedules-find"
	qSchedulesAdd        = "schedules-add"
	qSchedulesRemove     = "schedules-remove"
	qSchedulesDue        = "schedules-due"
	qSchedulesLockDue    = "schedules-lock-due"
	qSchedulesActiveJobs = "schedules-active-jobs"
	qSchedulesRan        = "schedules-ran"
)
