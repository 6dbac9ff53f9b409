-- queuety-go's own tables, beside the plugin's and named the same way
-- ({prefix}queuety_<suffix>). PHP never reads them. Each statement starts
-- with a "-- table: <suffix>" line; migrate creates the missing ones.

-- table: workers
-- Worker registrations (durable-workflow's worker_registrations): every
-- `queuety work` process and every external HTTP worker. A registration is
-- stale when last_heartbeat_at is older than the stale threshold; sessions
-- held by a stale (or deleted) registration become orphaned. Ids compare
-- byte for byte (utf8mb4_bin): the Go side compares lease owners exactly,
-- and worker_id fits jobs.reserved_by (VARCHAR(64)), which a session's jobs
-- carry.
CREATE TABLE IF NOT EXISTS {workers} (
	namespace VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT 'default',
	worker_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
	task_queue VARCHAR(191) NOT NULL,
	queues TEXT NOT NULL,
	runtime VARCHAR(32) NOT NULL DEFAULT 'go',
	sdk_version VARCHAR(191) DEFAULT NULL,
	build_id VARCHAR(191) DEFAULT NULL,
	capabilities TEXT NOT NULL,
	max_concurrent_worker_sessions INT UNSIGNED DEFAULT NULL,
	status VARCHAR(20) NOT NULL DEFAULT 'active',
	heartbeat_interval_seconds INT UNSIGNED NOT NULL DEFAULT 10,
	task_slots TEXT DEFAULT NULL,
	process_metrics TEXT DEFAULT NULL,
	claims TEXT DEFAULT NULL,
	last_heartbeat_at DATETIME DEFAULT NULL,
	registered_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	PRIMARY KEY (namespace, worker_id),
	INDEX idx_heartbeat (namespace, last_heartbeat_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table: worker_sessions
-- Worker session leases (durable-workflow's worker_session_leases): one
-- row per (namespace, session_id), changed only under SELECT ... FOR UPDATE.
CREATE TABLE IF NOT EXISTS {worker_sessions} (
	id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
	namespace VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT 'default',
	session_id VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
	connection VARCHAR(255) DEFAULT NULL,
	queue VARCHAR(255) DEFAULT NULL,
	requirements TEXT NOT NULL,
	status VARCHAR(20) NOT NULL,
	lease_owner VARCHAR(64) COLLATE utf8mb4_bin DEFAULT NULL,
	lease_expires_at DATETIME DEFAULT NULL,
	ttl_expires_at DATETIME DEFAULT NULL,
	closed_at DATETIME DEFAULT NULL,
	failure_reason VARCHAR(32) DEFAULT NULL,
	lease_seconds INT UNSIGNED NOT NULL DEFAULT 120,
	ttl_seconds INT UNSIGNED NOT NULL DEFAULT 1800,
	max_concurrent_activities INT UNSIGNED NOT NULL DEFAULT 1,
	create_if_missing TINYINT(1) NOT NULL DEFAULT 1,
	allow_reacquire_after_failure TINYINT(1) NOT NULL DEFAULT 1,
	last_heartbeat_at DATETIME DEFAULT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	UNIQUE KEY uq_session (namespace, session_id),
	INDEX idx_owner (namespace, lease_owner, status),
	INDEX idx_updated (namespace, updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table: activity_executions
-- One row per local activity execution (durable-workflow's
-- activity_executions with activity_options.execution_mode = local): the
-- step job it runs for (that job row is the durable workflow task whose
-- reserved_by/reserved_at are the lease every attempt runs under), its
-- options snapshot, attempt count and outcome. status: pending (no attempt
-- running; a retry waits on the job's available_at), running, completed,
-- failed or cancelled. retry_reason is why the next attempt will run
-- (failure, timeout, cold_replay); it is copied onto that attempt's row.
-- history is the execution's durable-workflow activity history
-- (ActivityScheduled, ActivityStarted, ActivityHeartbeatRecorded, ...), a
-- PHP-encoded JSON list appended under this row's lock: the plugin's
-- workflow_events.event is an ENUM of Queuety's names, so only the events
-- with a Queuety counterpart (step_started, step_completed, step_failed)
-- are also written there.
CREATE TABLE IF NOT EXISTS {activity_executions} (
	id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
	workflow_id BIGINT UNSIGNED NOT NULL,
	step_index INT UNSIGNED NOT NULL,
	job_id BIGINT UNSIGNED NOT NULL,
	activity_type VARCHAR(255) NOT NULL,
	execution_mode VARCHAR(16) NOT NULL DEFAULT 'local',
	queue_bypassed TINYINT(1) NOT NULL DEFAULT 1,
	status VARCHAR(20) NOT NULL DEFAULT 'pending',
	attempt_count INT UNSIGNED NOT NULL DEFAULT 0,
	current_attempt_id CHAR(26) DEFAULT NULL,
	activity_options TEXT NOT NULL,
	retry_policy TEXT NOT NULL,
	result LONGTEXT DEFAULT NULL,
	history LONGTEXT DEFAULT NULL,
	last_error TEXT DEFAULT NULL,
	last_error_class VARCHAR(255) DEFAULT NULL,
	retry_reason VARCHAR(20) DEFAULT NULL,
	timeout_kind VARCHAR(32) DEFAULT NULL,
	schedule_to_close_deadline_at DATETIME(3) DEFAULT NULL,
	close_deadline_at DATETIME(3) DEFAULT NULL,
	heartbeat_deadline_at DATETIME(3) DEFAULT NULL,
	last_heartbeat_at DATETIME(3) DEFAULT NULL,
	started_at DATETIME(3) DEFAULT NULL,
	closed_at DATETIME(3) DEFAULT NULL,
	created_at DATETIME(3) NOT NULL,
	updated_at DATETIME(3) NOT NULL,
	UNIQUE KEY uq_job (job_id),
	INDEX idx_workflow (workflow_id, step_index),
	INDEX idx_status (execution_mode, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table: activity_attempts
-- One row per attempt of a local activity (id is a ULID): running, then
-- completed, failed, expired (interrupted by a crash; closed by the cold
-- replay that follows) or cancelled. retry_reason says why this attempt
-- ran (null for the first). lease_expires_at is the workflow task's lease
-- (jobs.reserved_at + the stale timeout) as last renewed.
CREATE TABLE IF NOT EXISTS {activity_attempts} (
	id CHAR(26) NOT NULL PRIMARY KEY,
	execution_id BIGINT UNSIGNED NOT NULL,
	workflow_id BIGINT UNSIGNED NOT NULL,
	job_id BIGINT UNSIGNED NOT NULL,
	attempt_number INT UNSIGNED NOT NULL,
	status VARCHAR(20) NOT NULL DEFAULT 'running',
	lease_owner VARCHAR(191) DEFAULT NULL,
	retry_reason VARCHAR(20) DEFAULT NULL,
	timeout_kind VARCHAR(32) DEFAULT NULL,
	error_message TEXT DEFAULT NULL,
	error_class VARCHAR(255) DEFAULT NULL,
	progress TEXT DEFAULT NULL,
	started_at DATETIME(3) NOT NULL,
	last_heartbeat_at DATETIME(3) DEFAULT NULL,
	lease_expires_at DATETIME(3) DEFAULT NULL,
	closed_at DATETIME(3) DEFAULT NULL,
	UNIQUE KEY uq_attempt (execution_id, attempt_number),
	INDEX idx_workflow (workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table: for_each_plans
-- The cursor of a for_each plan that inserts its branch jobs in pages (one
-- transaction a page, steps/for_each.go): one row per placeholder job while
-- its plan is under way, deleted in the transaction that inserts the last
-- page. next_item is the first item index not yet given a branch job; a
-- placeholder run again after its worker died resumes there, so a kill
-- mid-plan neither loses nor doubles a branch. PHP never reads it.
CREATE TABLE IF NOT EXISTS {for_each_plans} (
	job_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	workflow_id BIGINT UNSIGNED NOT NULL,
	step_index INT UNSIGNED NOT NULL,
	next_item BIGINT UNSIGNED NOT NULL,
	total_items BIGINT UNSIGNED NOT NULL,
	updated_at DATETIME NOT NULL,
	INDEX idx_workflow (workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
