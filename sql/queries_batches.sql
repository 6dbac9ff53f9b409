-- Batches (BatchManager): the counters a batch job's completion or burial
-- updates, in the same transaction as the job's own transition.

-- name: lock-batch
-- BatchManager::record_completion/record_failure read the row FOR UPDATE,
-- so two workers finishing jobs of one batch count one after the other.
SELECT id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options,
	cancelled_at, created_at, finished_at
FROM {batches} WHERE id = ? FOR UPDATE

-- name: get-batch
-- BatchManager::find: the batch a callback is given, read after the commit.
SELECT id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options,
	cancelled_at, created_at, finished_at
FROM {batches} WHERE id = ?

-- name: batch-completion
UPDATE {batches} SET pending_jobs = ? WHERE id = ?

-- name: batch-completion-finished
UPDATE {batches} SET pending_jobs = ?, finished_at = NOW() WHERE id = ?

-- name: batch-failure
UPDATE {batches} SET pending_jobs = ?, failed_jobs = ?, failed_job_ids = ? WHERE id = ?

-- name: batch-failure-finished
UPDATE {batches} SET pending_jobs = ?, failed_jobs = ?, failed_job_ids = ?, finished_at = NOW() WHERE id = ?

-- name: claim-which-batches-go
-- Appended to the claim when no PHP pool runs batch callbacks: a batch job
-- is claimed only when each of its batch's callbacks has a Go
-- implementation (the IN lists), so PHP callbacks stay with PHP workers.
-- A job whose batch row is gone (pruned) runs like any other, as in PHP.
(job.batch_id IS NULL OR COALESCE((SELECT
	COALESCE(JSON_VALUE(b.options, '$.then') IN (?), 1)
	AND COALESCE(JSON_VALUE(b.options, '$.catch') IN (?), 1)
	AND COALESCE(JSON_VALUE(b.options, '$.finally') IN (?), 1)
	FROM {batches} b WHERE b.id = job.batch_id), 1))

-- name: claim-which-chain-catch-go
-- With claim-which-batches-go: a chain link whose catch (the payload's
-- __chain_catch) has no Go implementation stays with PHP workers. LOCATE
-- keeps the JSON parse off the many payloads without the key.
(LOCATE('"__chain_catch"', job.payload) = 0 OR JSON_VALUE(job.payload, '$.__chain_catch') IN (?))

-- name: cancel-batch
-- BatchManager::cancel: the jobs still run; the counters stay frozen.
UPDATE {batches} SET cancelled_at = NOW(), finished_at = NOW() WHERE id = ? AND cancelled_at IS NULL

-- name: insert-batch
-- BatchManager::create: every job counted pending, none failed.
INSERT INTO {batches} (name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options)
VALUES (?, ?, ?, 0, '[]', ?)
