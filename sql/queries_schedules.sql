-- Recurring schedules: the plugin's Scheduler (list, find, add, remove) and
-- its tick, which the scheduler inside `work` and `queuety schedule run`
-- run. Constants in queries_schedules.go.
--
-- A tick takes due rows one at a time, each in its own transaction: the
-- row is re-read with a locking read (FOR UPDATE SKIP LOCKED, as the
-- plugin's tick does), and its job is inserted in the same transaction as
-- the update that moves next_run past now. A locking read sees the latest
-- committed row, so once one process has committed a run no other finds
-- the row due; while one holds the row, the others skip it. The update
-- also names the next_run it read, so a row changed in between is never
-- dispatched a second time.

-- name: schedules-list
SELECT id, handler, payload, queue, expression, expression_type, last_run, next_run,
	overlap_policy, enabled, created_at
FROM {schedules} ORDER BY id

-- name: schedules-find
SELECT id, handler, payload, queue, expression, expression_type, last_run, next_run,
	overlap_policy, enabled, created_at
FROM {schedules} WHERE handler = ?

-- name: schedules-add
-- Scheduler::add: created_at, last_run and enabled keep their defaults.
INSERT INTO {schedules} (handler, payload, queue, expression, expression_type, next_run, overlap_policy)
VALUES (?, ?, ?, ?, ?, ?, ?)

-- name: schedules-remove
DELETE FROM {schedules} WHERE handler = ?

-- name: schedules-due
-- The ids of due rows, a page at a time (id > ?): a plain read, each id is
-- then locked and checked again by schedules-lock-due.
SELECT id FROM {schedules} WHERE enabled = 1 AND next_run <= ? AND id > ? ORDER BY id LIMIT ?

-- name: schedules-lock-due
-- Still due, and not held by another tick (the plugin's or ours).
SELECT id, handler, payload, queue, expression, expression_type, last_run, next_run,
	overlap_policy, enabled, created_at
FROM {schedules} WHERE id = ? AND enabled = 1 AND next_run <= ?
FOR UPDATE SKIP LOCKED

-- name: schedules-active-jobs
-- The overlap check of skip and buffer: any pending or processing job of
-- the handler, whatever its queue or origin.
SELECT COUNT(*) FROM {jobs} WHERE handler = ? AND status IN ('pending', 'processing')

-- name: schedules-ran
-- A run (dispatched, or skipped by the skip policy): last_run is the tick's
-- time and next_run counts from it. Only if next_run is still what the
-- locking read saw.
UPDATE {schedules} SET last_run = ?, next_run = ? WHERE id = ? AND next_run = ?
