-- Queues: pause and resume (the plugin's queue_states), the counts by queue
-- and status, and what waits on a worker's queues. Constants in
-- queries_queues.go.

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

-- name: pause-queue
INSERT INTO {queue_states} (queue, paused, paused_at) VALUES (?, 1, NOW())
ON DUPLICATE KEY UPDATE paused = 1, paused_at = NOW()

-- name: resume-queue
DELETE FROM {queue_states} WHERE queue = ?

-- name: paused-queues
SELECT queue FROM {queue_states} WHERE paused = 1 ORDER BY queue

-- name: stats
SELECT queue, status, COUNT(*) AS n FROM {jobs} GROUP BY queue, status ORDER BY queue
