-- queuety-go's own tables, beside the plugin's and named the same way
-- ({prefix}queuety_<suffix>). PHP never reads them. Each statement starts
-- with a "-- table: <suffix>" line; migrate creates the missing ones.

-- table: workers
-- Worker registrations (durable-workflow's worker_registrations): every
-- `queuety work` process and every external HTTP worker. A registration is
-- stale when last_heartbeat_at is older than the stale threshold; sessions
-- held by a stale (or deleted) registration become orphaned.
CREATE TABLE IF NOT EXISTS {workers} (
	namespace VARCHAR(128) NOT NULL DEFAULT 'default',
	worker_id VARCHAR(191) NOT NULL,
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
	namespace VARCHAR(128) NOT NULL DEFAULT 'default',
	session_id VARCHAR(255) NOT NULL,
	connection VARCHAR(255) DEFAULT NULL,
	queue VARCHAR(255) DEFAULT NULL,
	requirements TEXT NOT NULL,
	status VARCHAR(20) NOT NULL,
	lease_owner VARCHAR(191) DEFAULT NULL,
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
-- step job it runs for, its options snapshot, attempt count and outcome.
CREATE TABLE IF NOT EXISTS {activity_executions} (
	id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
	workflow_id BIGINT UNSIGNED NOT NULL,
	step_index TINYINT UNSIGNED NOT NULL,
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
	last_error TEXT DEFAULT NULL,
	schedule_to_close_deadline_at DATETIME DEFAULT NULL,
	close_deadline_at DATETIME DEFAULT NULL,
	heartbeat_deadline_at DATETIME DEFAULT NULL,
	last_heartbeat_at DATETIME DEFAULT NULL,
	started_at DATETIME DEFAULT NULL,
	closed_at DATETIME DEFAULT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	UNIQUE KEY uq_job (job_id),
	INDEX idx_workflow (workflow_id, step_index),
	INDEX idx_status (execution_mode, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table: activity_attempts
-- One row per attempt of a local activity (id is a ULID): running, then
-- completed, failed, expired (interrupted; closed by cold replay) or
-- cancelled.
CREATE TABLE IF NOT EXISTS {activity_attempts} (
	id CHAR(26) NOT NULL PRIMARY KEY,
	execution_id BIGINT UNSIGNED NOT NULL,
	workflow_id BIGINT UNSIGNED NOT NULL,
	job_id BIGINT UNSIGNED NOT NULL,
	attempt_number INT UNSIGNED NOT NULL,
	status VARCHAR(20) NOT NULL DEFAULT 'running',
	lease_owner VARCHAR(191) DEFAULT NULL,
	retry_reason VARCHAR(20) DEFAULT NULL,
	error_message TEXT DEFAULT NULL,
	progress TEXT DEFAULT NULL,
	started_at DATETIME NOT NULL,
	last_heartbeat_at DATETIME DEFAULT NULL,
	lease_expires_at DATETIME DEFAULT NULL,
	closed_at DATETIME DEFAULT NULL,
	UNIQUE KEY uq_attempt (execution_id, attempt_number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
