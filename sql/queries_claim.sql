-- The claim: Queue::claim's predicate batched, its /*which*/ fragments,
-- session-bound candidates, concurrency-group admission and the claim's
-- writes (claim.go). Constants in queries_claim.go.

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
SELECT GET_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT({database}, '.', ?), 256), 40)), ?)

-- name: release-group-lock
SELECT RELEASE_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT({database}, '.', ?), 256), 40)))

-- name: group-lock-holder
-- The connection holding a group's lock, or NULL (the tests' check that a
-- claim released its locks).
SELECT IS_USED_LOCK(CONCAT('queuety-go:group:', LEFT(SHA2(CONCAT({database}, '.', ?), 256), 40)))

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
