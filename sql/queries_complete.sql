-- An attempt's end: completion, retry, burial, unclaim and release, the
-- fence that checks who holds a row, and the log rows written with them.
-- Constants in queries_complete.go.

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
