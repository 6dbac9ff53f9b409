-- Running attempts: heartbeats, the rows a worker holds, and the stale
-- sweep (Worker::recover_stale). Constants in queries_liveness.go.

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
