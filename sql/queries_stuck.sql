-- Rows that can never run as they are (issue 11): what `status`,
-- `job list --stuck` and `job inspect` flag. Every scan is bounded: it
-- reads at most a fixed number of index entries, oldest first (a row that
-- can never run stays pending while the rows around it move on, so it ends
-- up among the oldest), and returns at most a fixed number of rows.

-- name: stuck-reason
-- The reason a job can never run as it is, or NULL; spliced into the
-- queries below at /*reason*/ over `job` LEFT JOIN `dep` (its dependency)
-- LEFT JOIN `wf` (its workflow). The claim takes a pending job only when
-- its dependency is completed (so a missing, buried, failed or circular
-- one blocks it for ever), never a step job whose workflow row is gone,
-- and never admits a job whose concurrency group has limit 0. A processing
-- row the stale sweep cannot age (reserved_at NULL: it ages it from
-- available_at; reserved_at far in the future) is flagged too.
CASE
	WHEN job.status = 'processing' AND job.reserved_at IS NULL THEN 'reserved_at_null'
	WHEN job.status = 'processing' AND job.reserved_at > NOW() + INTERVAL 1 HOUR THEN 'reserved_at_future'
	WHEN job.status <> 'pending' THEN NULL
	WHEN job.workflow_id IS NOT NULL AND wf.id IS NULL THEN 'workflow_missing'
	WHEN job.concurrency_group IS NOT NULL AND job.concurrency_limit = 0 THEN 'concurrency_limit_zero'
	WHEN job.depends_on IS NULL THEN NULL
	WHEN dep.id IS NULL THEN 'dependency_missing'
	WHEN dep.id = job.id THEN 'dependency_self'
	WHEN dep.status IN ('buried', 'failed') THEN 'dependency_buried'
	WHEN dep.status = 'pending' AND dep.depends_on = job.id THEN 'dependency_cycle'
END

-- name: stuck-pending-jobs
-- The oldest pending jobs (at most the first ?, through idx_status, whose
-- entries are in id order), those of them that can never run (at most ?).
SELECT job.id, job.queue, job.depends_on, job.workflow_id, job.concurrency_group, dep.status AS dep_status,
	/*reason*/ AS reason
FROM (
	SELECT id, queue, status, reserved_at, depends_on, workflow_id, concurrency_group, concurrency_limit
	FROM {jobs} FORCE INDEX (idx_status)
	WHERE status = 'pending'
	ORDER BY id
	LIMIT ?
) AS job
LEFT JOIN {jobs} AS dep ON dep.id = job.depends_on
LEFT JOIN {workflows} AS wf ON wf.id = job.workflow_id
HAVING reason IS NOT NULL
ORDER BY job.id
LIMIT ?

-- name: stuck-dependent-jobs
-- The jobs with the highest depends_on (at most ?, through idx_depends,
-- whatever their status), those of them that can never run (at most ?):
-- a dependency problem among the newest rows, which the oldest-pending
-- scan does not reach behind a large backlog.
SELECT job.id, job.queue, job.depends_on, job.workflow_id, job.concurrency_group, dep.status AS dep_status,
	/*reason*/ AS reason
FROM (
	SELECT id, queue, status, reserved_at, depends_on, workflow_id, concurrency_group, concurrency_limit
	FROM {jobs} FORCE INDEX (idx_depends)
	WHERE depends_on IS NOT NULL
	ORDER BY depends_on DESC
	LIMIT ?
) AS job
LEFT JOIN {jobs} AS dep ON dep.id = job.depends_on
LEFT JOIN {workflows} AS wf ON wf.id = job.workflow_id
HAVING reason IS NOT NULL
ORDER BY job.id
LIMIT ?

-- name: stuck-processing-jobs
-- Processing rows the stale sweep cannot age from reserved_at: two ranges
-- of idx_reserved (status, reserved_at), at most ? rows.
SELECT job.id, job.queue, job.depends_on, job.workflow_id, job.concurrency_group, dep.status AS dep_status,
	/*reason*/ AS reason
FROM {jobs} AS job FORCE INDEX (idx_reserved)
LEFT JOIN {jobs} AS dep ON dep.id = job.depends_on
LEFT JOIN {workflows} AS wf ON wf.id = job.workflow_id
WHERE job.status = 'processing' AND (job.reserved_at IS NULL OR job.reserved_at > NOW() + INTERVAL 1 HOUR)
ORDER BY job.id
LIMIT ?

-- name: stuck-jobs-by-id
-- The reason of each listed job (by primary key), for `job list` and
-- `job inspect`.
SELECT job.id, job.queue, job.depends_on, job.workflow_id, job.concurrency_group, dep.status AS dep_status,
	/*reason*/ AS reason
FROM {jobs} AS job
LEFT JOIN {jobs} AS dep ON dep.id = job.depends_on
LEFT JOIN {workflows} AS wf ON wf.id = job.workflow_id
WHERE job.id IN (?)
HAVING reason IS NOT NULL

-- name: stuck-workflow-candidates
-- Live workflows (at most the oldest ?) whose state may not be runnable:
-- fewer usable _steps entries (objects or class strings, the only ones the
-- plugin keeps) than total_steps, or a state the server cannot read. The
-- server's JSON functions stop at 32 levels, where PHP reads 512, so a
-- deep but valid state is a candidate too; the caller parses each one.
-- The ids come from idx_status alone (index entries, sorted), then each
-- row is read by primary key (STRAIGHT_JOIN keeps that order). At most ?
-- rows.
SELECT wf.id, wf.name, wf.status, wf.current_step, wf.total_steps, wf.state
FROM (
	SELECT id FROM {workflows} FORCE INDEX (idx_status)
	WHERE status IN ('running', 'paused', 'waiting_for_signal', 'waiting_for_workflows')
	ORDER BY id
	LIMIT ?
) AS live
STRAIGHT_JOIN {workflows} AS wf ON wf.id = live.id
WHERE CASE WHEN JSON_VALID(wf.state) THEN
		(SELECT COUNT(*) FROM JSON_TABLE(wf.state, '$._steps[*]' COLUMNS (step JSON PATH '$')) AS steps
		 WHERE JSON_TYPE(steps.step) IN ('OBJECT', 'STRING')) < wf.total_steps
	ELSE 1 END
ORDER BY wf.id
LIMIT ?

-- name: jobs-by-ids
-- The rows `job list --stuck` shows, newest first like list-jobs.
SELECT * FROM {jobs} WHERE id IN (?) ORDER BY id DESC
