-- Every SQL statement queuety-go runs against the job tables, by name.
-- {jobs}, {logs}, {queue_states}, {workflows} are replaced by the resolved,
-- backquoted table names when the Store is built; "(?)" after IN is expanded
-- by sqlx.In. Keep statements short: the claim and the completion run tens of
-- thousands of times a second.

-- name: find-unique-job
-- Queuety's unique check (Queue::dispatch): same handler and payload bytes,
-- still pending or processing. Not atomic in PHP either.
SELECT id FROM {jobs}
WHERE handler = ? AND payload_hash = ? AND status IN ('pending', 'processing')
LIMIT 1

-- name: insert-job
INSERT INTO {jobs}
	(queue, handler, payload, payload_hash, priority, status, max_attempts, available_at,
	 workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units,
	 session_id, worker_session)
VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: claim-jobs
-- Queue::claim's predicate, batched: one round trip claims as many rows as
-- the worker has free slots. Forced onto our DESC index (see extensions.sql).
-- /*which*/ is replaced by the claim-which-* fragments below: which plain
-- jobs (all, or only this worker's handlers, so PHP-only handlers stay for
-- PHP workers) and, with the workflow engine on, which workflow steps.
-- Batch jobs are claimed like any other (BatchManager's counters are
-- written with their completion); without a PHP pool, /*which*/ also holds
-- claim-which-batches-go, which leaves batches with PHP callbacks to PHP.
-- The dependency test is a scalar subquery, not PHP's EXISTS: the
-- optimizer turns EXISTS into a materialized semi-join over every completed
-- job, which made each claim slower as the table grew; this form is one
-- primary key lookup per candidate with a dependency. Subquery rows are not
-- locked.
SELECT id, queue, handler, payload, priority, attempts, max_attempts, available_at,
	workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units
FROM {jobs} AS job FORCE INDEX (idx_qgo_claim)
WHERE job.queue = ? AND job.status = 'pending' AND job.available_at <= NOW()
	AND job.session_id IS NULL
	AND /*which*/
	AND (job.depends_on IS NULL
		OR (SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on) = 'completed')
ORDER BY job.priority DESC, job.id ASC
LIMIT ?
FOR UPDATE SKIP LOCKED

-- name: claim-session-candidates
-- Session-bound jobs are never taken by claim-jobs: the worker first reads
-- the pending ones of its queues without locking (durable-workflow's
-- pre-filter), keeps those whose worker_session it can satisfy, then locks
-- them by id (lock-session-jobs) and admits each through its session. The
-- NOT IN list holds the sessions this window already found it cannot use,
-- so their jobs do not hide the others behind them.
SELECT id, queue, handler, payload, priority, attempts, max_attempts, available_at,
	workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units,
	session_id, worker_session
FROM {jobs} AS job FORCE INDEX (idx_qgo_session)
WHERE job.session_pending IS NOT NULL AND job.status = 'pending'
	AND job.queue IN (?) AND job.session_pending NOT IN (?)
	AND job.available_at <= NOW()
	AND /*which*/
	AND (job.depends_on IS NULL
		OR (SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on) = 'completed')
ORDER BY job.priority DESC, job.id ASC
LIMIT ?

-- name: lock-session-jobs
-- Locks the session-bound candidates still claimable (see above), and a
-- cluster claim's slice candidates (ClaimTx.selectSlice), by primary key.
-- Their other conditions were read a moment before in the same
-- transaction; a dependency never turns incomplete again.
SELECT id, queue, handler, payload, priority, attempts, max_attempts, available_at,
	workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units,
	session_id, worker_session
FROM {jobs} AS job
WHERE job.id IN (?) AND job.status = 'pending' AND job.available_at <= NOW()
ORDER BY job.priority DESC, job.id ASC
FOR UPDATE SKIP LOCKED

-- name: autoinc-settings
-- How the server numbers the rows of one multi-row INSERT (see
-- Store.consecutiveIDs).
SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS step

-- name: any-due
-- An idle lane's look before it opens a claim: is any job of these queues
-- pending and due? A plain read on the claim index, no lock and no
-- transaction. Every claim-jobs and claim-session-candidates row is such a
-- row, so "none" means the claim would take nothing; "some" (maybe
-- locked by another claimer, or not this worker's) means it claims as
-- usual. An idle poll is then one short statement where the claim is four
-- round trips and a statement the server spends most of its time parsing.
SELECT 1 FROM {jobs} FORCE INDEX (idx_qgo_claim)
WHERE queue IN (?) AND status = 'pending' AND available_at <= NOW()
LIMIT 1

-- name: claim-which-plain
job.workflow_id IS NULL

-- name: claim-which-plain-handlers
(job.workflow_id IS NULL AND job.handler IN (?))

-- name: claim-which-steps
-- With the workflow engine on (Config.Workflows): a step whose handler the
-- engine runs, of a workflow that is running or paused, as in Queue::claim.
(job.workflow_id IS NOT NULL AND job.handler IN (?)
	AND (SELECT wf.status FROM {workflows} wf WHERE wf.id = job.workflow_id) IN ('running', 'paused'))

-- name: claim-which-all-steps
-- claim-which-steps when a fallback (the PHP handler pool) runs the steps
-- without a Go handler: every step of a running or paused workflow.
(job.workflow_id IS NOT NULL
	AND (SELECT wf.status FROM {workflows} wf WHERE wf.id = job.workflow_id) IN ('running', 'paused'))

-- name: claim-which-skip-groups
-- Appended to /*which*/ when a claim found groups saturated (see Worker.admit).
(job.concurrency_group IS NULL OR job.concurrency_group NOT IN (?))

-- name: processing-by-group
-- ResourceManager::admit's concurrency check, for the groups of a window.
SELECT concurrency_group AS grp, COUNT(*) AS n FROM {jobs}
WHERE status = 'processing' AND concurrency_group IN (?)
GROUP BY concurrency_group

-- name: get-group-lock
-- Serializes concurrency-group admission between Go workers (see LockGroups).
-- GET_LOCK names are server-wide, so the name carries the database besides
-- the jobs table and group the key holds (64 characters at most): two
-- sites on one server with the same table prefix do not wait for each
-- other's admission.
SELECT GET_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40)), ?)

-- name: release-group-lock
SELECT RELEASE_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40)))

-- name: group-lock-holder
-- The connection holding a group's lock, or NULL (the tests' check that a
-- claim released its locks).
SELECT IS_USED_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40)))

-- name: claim-running
-- A claim's write: the rows it locked become processing rows held by this
-- worker, as Queue::claim leaves them. LEAST keeps attempts inside TINYINT
-- UNSIGNED. The id set is written as ranges (see idRanges): the row locks
-- are held, so a range of consecutive ids names exactly those rows, and the
-- server applies ranges markedly faster than a long IN list.
UPDATE {jobs}
SET status = 'processing', reserved_at = NOW(), attempts = LEAST(attempts + 1, 255), reserved_by = ?
WHERE /*ids*/

-- name: claim-bury
-- A locked row the claim will not run (its worker_session cannot be read),
-- as claim + bury leaves it.
UPDATE {jobs}
SET status = 'buried', attempts = LEAST(attempts + 1, 255), reserved_at = NOW(), failed_at = NOW(), error_message = ?, reserved_by = ?
WHERE id = ?

-- name: insert-logs
-- Values tuples (13 columns each) are appended by the store.
INSERT INTO {logs}
	(job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, memory_peak_kb,
	 error_message, error_class, error_trace, context)
VALUES

-- name: insert-logs-narrow
-- insert-logs for rows with no error or context (9 columns a tuple).
INSERT INTO {logs}
	(job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, memory_peak_kb)
VALUES

-- name: lock-attempts
-- Fence for completions, retries and burials: read who holds each row now
-- (causal on a cluster, see Store.lockAttempts).
SELECT id, status, attempts, reserved_by FROM {jobs} WHERE id IN (?) FOR UPDATE

-- name: complete-jobs
-- reserved_by stays, so a completion retried after a lost connection sees its
-- own finished row and does not log twice.
UPDATE {jobs} SET status = 'completed', completed_at = NOW() WHERE id IN (?)

-- name: pending-handlers
-- What is waiting on the worker's queues, by handler and kind (plain job or
-- workflow step), for the start-up report of work this worker will leave.
-- The inner LIMIT bounds the read on a large backlog.
SELECT handler, is_step, COUNT(*) AS n FROM (
	SELECT handler, workflow_id IS NOT NULL AS is_step FROM {jobs} FORCE INDEX (idx_qgo_claim)
	WHERE queue IN (?) AND status = 'pending' AND batch_id IS NULL
	LIMIT 20000
) AS pending
GROUP BY handler, is_step
ORDER BY n DESC
LIMIT 50

-- name: complete-held-jobs
-- CompleteJobs' fast path: the fence is in the WHERE (/*fence*/: one
-- "attempts = ? AND (ids)" group per attempt number), so a batch whose
-- attempts all hold their rows takes one statement; the caller compares the
-- rows changed with the batch.
UPDATE {jobs} SET status = 'completed', completed_at = NOW()
WHERE status = 'processing' AND reserved_by = ? AND (/*fence*/)

-- name: retry-job
-- Queue::retry: attempts is kept; available_at comes from the app clock (UTC).
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id = ?

-- name: bury-job
UPDATE {jobs} SET status = 'buried', failed_at = NOW(), error_message = ? WHERE id = ?

-- name: unclaim-jobs
-- Queue::unclaim, for rows the caller checked it holds (lock-attempts):
-- gives the attempt back. IF() because attempts is unsigned and
-- attempts - 1 on 0 is an error in strict mode.
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL,
	attempts = IF(attempts > 0, attempts - 1, 0)
WHERE id IN (?)

-- name: release-job-later
-- An attempt given back untouched to run elsewhere later (a step only PHP
-- workers can run): the attempt restored, available_at moved, only while
-- the caller still holds it.
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL,
	attempts = IF(attempts > 0, attempts - 1, 0), available_at = ?
WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: delete-started-log
-- The started row of an attempt that was handed back before it ran.
DELETE FROM {logs} WHERE job_id = ? AND event = 'started' AND attempt = ? ORDER BY id DESC LIMIT 1

-- name: heartbeat
UPDATE {jobs} SET reserved_at = NOW()
WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: heartbeat-progress
UPDATE {jobs} SET reserved_at = NOW(), heartbeat_data = ?
WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: attempt-held
SELECT COUNT(*) FROM {jobs} WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: touch-jobs
-- Automatic heartbeat for every attempt a worker holds, so no stale sweep
-- (ours or PHP's) re-queues a long job that is still running.
UPDATE {jobs} SET reserved_at = NOW() WHERE id IN (?) AND status = 'processing' AND reserved_by = ?

-- name: owned-jobs
SELECT id FROM {jobs} WHERE id IN (?) AND status = 'processing' AND reserved_by = ?

-- name: find-stale
-- Worker::recover_stale: processing rows not heard from since the cutoff
-- (app clock). Locked and skipped-if-locked, so concurrent sweepers (several
-- daemons) never act on one row twice, which PHP's sweep can. A processing
-- row without reserved_at (written by hand or a broken tool; PHP's
-- `reserved_at < ?` never matches it) is aged from available_at instead,
-- so it is rescued rather than stuck for ever. A row reserved further in
-- the future than any clock or time-zone skew explains (a hand edit, a
-- broken tool: 2099) is stale too, or it would wait until then (the third
-- argument is the app clock plus StaleFutureTolerance). The arms are ranges
-- of idx_reserved (status, reserved_at).
SELECT id, queue, handler, payload, priority, attempts, max_attempts,
	workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units
FROM {jobs}
WHERE status = 'processing' AND workflow_id IS NULL
	AND (reserved_at < ? OR (reserved_at IS NULL AND available_at < ?) OR reserved_at > ?)
ORDER BY id
LIMIT ?
FOR UPDATE SKIP LOCKED

-- name: pause-queue
INSERT INTO {queue_states} (queue, paused, paused_at) VALUES (?, 1, NOW())
ON DUPLICATE KEY UPDATE paused = 1, paused_at = NOW()

-- name: resume-queue
DELETE FROM {queue_states} WHERE queue = ?

-- name: paused-queues
SELECT queue FROM {queue_states} WHERE paused = 1 ORDER BY queue

-- name: stats
SELECT queue, status, COUNT(*) AS n FROM {jobs} GROUP BY queue, status ORDER BY queue

-- name: list-jobs
SELECT * FROM {jobs}
WHERE (? = '' OR queue = ?) AND (? = '' OR status = ?) AND (? = '' OR handler = ?)
ORDER BY id DESC
LIMIT ?

-- name: get-job
SELECT * FROM {jobs} WHERE id = ?

-- name: job-logs
SELECT * FROM {logs} WHERE job_id = ? ORDER BY id

-- name: retry-job-by-hand
-- Queue::retry(id, 0), as `job retry` and Queuety::retry do: from any status,
-- attempts kept.
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id = ?

-- name: buried-ids
SELECT id FROM {jobs} WHERE status = 'buried' AND (? = '' OR queue = ?) ORDER BY id

-- name: retry-buried
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id IN (?) AND status = 'buried'

-- name: bury-job-by-hand
UPDATE {jobs} SET status = 'buried', failed_at = NOW(), error_message = ?, reserved_by = NULL WHERE id = ?

-- name: delete-job
DELETE FROM {jobs} WHERE id = ?

-- name: count-buried
-- What retry-buried would touch, for its confirmation.
SELECT COUNT(*) FROM {jobs} WHERE status = 'buried' AND (? = '' OR queue = ?)

-- name: count-purgeable
-- What purge-completed would delete, for purge's confirmation.
SELECT COUNT(*) FROM {jobs} WHERE status = 'completed' AND completed_at < ?

-- name: purge-completed
-- In slices, so a large purge never holds a long lock on the hot table.
DELETE FROM {jobs} WHERE status = 'completed' AND completed_at < ? LIMIT 5000

-- name: server-version
SELECT VERSION()

-- name: server-process
-- Where the server keeps its pid file and the host it runs on: bench reads
-- the server's CPU time from /proc when that host is this machine.
SELECT @@pid_file, @@hostname

-- name: server-utc-offset
-- Seconds between the server's default NOW() and UTC, read on a connection
-- that did not set time_zone.
SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())

-- name: column-exists
SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?

-- name: index-exists
SELECT COUNT(*) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ?

-- name: insert-jobs-bulk
-- Queue::batch: one multi-row INSERT of the columns it sets; values tuples
-- (7 columns each) are appended by the store.
INSERT INTO {jobs} (queue, handler, payload, priority, status, max_attempts, available_at) VALUES

-- name: truncate-jobs
-- Benchmarks only: start from empty tables.
TRUNCATE TABLE {jobs}

-- name: truncate-logs
TRUNCATE TABLE {logs}

-- name: count-log-events
SELECT COUNT(*) FROM {logs} WHERE event = ?

-- Workflows (the engine in workflow/engine). Statements mirror Queuety's
-- Workflow.php: the workflow row and the job row are locked FOR UPDATE and
-- every change of one step happens in one transaction.

-- name: find-dispatch-key
SELECT workflow_id FROM {workflow_dispatch_keys} WHERE dispatch_key = ?

-- name: insert-dispatch-key
INSERT INTO {workflow_dispatch_keys} (dispatch_key, workflow_id) VALUES (?, ?)

-- name: insert-workflow
INSERT INTO {workflows}
	(name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index, deadline_at)
VALUES (?, 'running', ?, 0, ?, ?, ?, ?)

-- name: get-workflow
SELECT * FROM {workflows} WHERE id = ?

-- name: lock-workflow
SELECT * FROM {workflows} WHERE id = ? FOR UPDATE

-- name: lock-job
SELECT * FROM {jobs} WHERE id = ? FOR UPDATE

-- name: lock-workflows
-- A step batch's workflows, locked up front in id order (workflows_deferred.go).
SELECT * FROM {workflows} WHERE id IN (?) ORDER BY id FOR UPDATE

-- name: lock-jobs
-- A step batch's jobs, locked after its workflows, in id order.
SELECT * FROM {jobs} WHERE id IN (?) ORDER BY id FOR UPDATE

-- name: advance-workflows
-- advance-workflow and complete-workflow for a step batch's rows in one
-- statement: the store writes "WHEN id THEN value" lists for /*state*/ and
-- /*step*/, the completed rows' predicate (or FALSE) for /*done*/ and the
-- row set for /*ids*/.
UPDATE {workflows}
SET state = CASE id /*state*/ END, current_step = CASE id /*step*/ END,
	status = IF(/*done*/, 'completed', status), completed_at = IF(/*done*/, NOW(), completed_at)
WHERE /*ids*/

-- name: complete-workflow-jobs
-- complete-workflow-job for a step batch's rows; /*ids*/ as claim-running.
UPDATE {jobs} SET status = 'completed', completed_at = NOW()
WHERE (/*ids*/) AND status IN ('pending', 'processing')

-- name: update-workflow-state
UPDATE {workflows} SET state = ? WHERE id = ?

-- name: advance-workflow
UPDATE {workflows} SET state = ?, current_step = ? WHERE id = ?

-- name: complete-workflow
UPDATE {workflows}
SET state = ?, current_step = ?, status = 'completed', completed_at = NOW()
WHERE id = ?

-- name: fail-workflow
-- mark_workflow_failed_locked: only a live workflow fails; the caller logs
-- and buries only when a row changed.
UPDATE {workflows}
SET status = 'failed', failed_at = NOW(), error_message = ?, state = ?
WHERE id = ? AND status IN ('running', 'paused', 'waiting_for_signal', 'waiting_for_workflows')

-- name: complete-workflow-job
-- mark_workflow_job_completed.
UPDATE {jobs} SET status = 'completed', completed_at = NOW()
WHERE id = ? AND status IN ('pending', 'processing')

-- name: complete-workflow-job-any
-- The parallel-branch and stale-placeholder paths complete the row whatever
-- its status (the caller checked it under lock).
UPDATE {jobs} SET status = 'completed', completed_at = NOW() WHERE id = ?

-- name: count-completed-step-jobs
-- count_completed_jobs_for_step: every completed job ever recorded for the
-- step counts (see the spec, §3.3, on retries and back-edges).
SELECT COUNT(*) FROM {jobs} WHERE workflow_id = ? AND step_index = ? AND status = 'completed'

-- name: bury-step-jobs
-- bury_active_jobs_for_step; id 0 excepts nothing.
UPDATE {jobs} SET status = 'buried', failed_at = NOW(), error_message = ?
WHERE workflow_id = ? AND step_index = ? AND status IN ('pending', 'processing') AND id != ?

-- name: bury-workflow-jobs
-- bury_active_jobs_for_workflow; id 0 excepts nothing.
UPDATE {jobs} SET status = 'buried', failed_at = NOW(), error_message = ?
WHERE workflow_id = ? AND status IN ('pending', 'processing') AND id != ?

-- name: claim-job-by-id
-- Claims one pending job by id as a claim would (tests and tools).
UPDATE {jobs}
SET status = 'processing', reserved_at = NOW(), attempts = LEAST(attempts + 1, 255), reserved_by = ?
WHERE id = ? AND status = 'pending'

-- name: insert-workflow-event
INSERT INTO {workflow_events}
	(workflow_id, job_id, parent_event_id, step_index, step_name, step_type, handler, event, queue, attempt,
	 input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms)
VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: retry-workflow-job
-- Queue::retry for a workflow step attempt: back to pending after backoff.
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id = ? AND status = 'processing'
