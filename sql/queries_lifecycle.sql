-- Workflow lifecycle (cancel, pause, resume, retry, deadlines), the stale
-- sweep of workflow steps, the status API, export and artifacts. Mirrors
-- Queuety's Workflow.php, WorkflowExporter.php and ArtifactStore.php.

-- name: lc-cancel-workflow
-- Workflow::cancel, on the locked row (the caller checked its status).
UPDATE {workflows} SET status = 'cancelled', completed_at = NOW() WHERE id = ?

-- name: lc-pause-workflow
-- Workflow::pause: only a running workflow pauses.
UPDATE {workflows} SET status = 'paused' WHERE id = ? AND status = 'running'

-- name: lc-resume-workflow
-- Workflow::resume, on the locked row (the caller checked it is paused).
UPDATE {workflows} SET status = 'running' WHERE id = ?

-- name: lc-retry-workflow
-- Workflow::retry, on the locked row (the caller checked it failed).
UPDATE {workflows} SET status = 'running', failed_at = NULL, error_message = NULL WHERE id = ?

-- name: lc-find-overdue-workflows
-- Workflow::check_deadlines: running workflows whose deadline passed
-- (waiting and paused workflows never hit theirs, as in PHP).
SELECT id FROM {workflows}
WHERE status = 'running' AND deadline_at IS NOT NULL AND deadline_at <= NOW()
ORDER BY id
LIMIT ?

-- name: lc-find-stale-workflow-steps
-- Worker::recover_stale for workflow step jobs (find-stale leaves them
-- out): processing rows not heard from since the cutoff (app clock), a
-- row without reserved_at aged from available_at, one reserved far in the
-- future taken at once. Locked and skipped-if-locked like find-stale.
SELECT id, queue, handler, payload, priority, attempts, max_attempts,
	workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units
FROM {jobs}
WHERE status = 'processing' AND workflow_id IS NOT NULL
	AND (reserved_at < ? OR (reserved_at IS NULL AND available_at < ?) OR reserved_at > ?)
ORDER BY id
LIMIT ?
FOR UPDATE SKIP LOCKED

-- name: lc-list-workflows
-- Workflow::list: newest first.
SELECT * FROM {workflows} ORDER BY id DESC LIMIT ?

-- name: lc-list-workflows-by-status
SELECT * FROM {workflows} WHERE status = ? ORDER BY id DESC LIMIT ?

-- name: lc-list-workflows-by-name
SELECT * FROM {workflows} WHERE name = ? ORDER BY id DESC LIMIT ?

-- name: lc-list-workflows-by-status-name
SELECT * FROM {workflows} WHERE status = ? AND name = ? ORDER BY id DESC LIMIT ?

-- name: lc-workflow-timeline
-- WorkflowEventLog::get_timeline: events in insertion order, paged.
SELECT * FROM {workflow_events} WHERE workflow_id = ? AND id > ? ORDER BY id ASC LIMIT ?

-- name: lc-export-workflow
SELECT * FROM {workflows} WHERE id = ?

-- name: lc-export-jobs
SELECT * FROM {jobs} WHERE workflow_id = ? ORDER BY id ASC

-- name: lc-export-events
SELECT * FROM {workflow_events} WHERE workflow_id = ? ORDER BY id ASC

-- name: lc-export-logs
SELECT * FROM {logs} WHERE workflow_id = ? ORDER BY id ASC

-- name: lc-export-signals
SELECT * FROM {signals} WHERE workflow_id = ? ORDER BY id ASC

-- name: lc-export-dependencies
SELECT * FROM {workflow_dependencies} WHERE waiting_workflow_id = ? ORDER BY id ASC

-- name: lc-export-artifacts
SELECT * FROM {artifacts} WHERE workflow_id = ? ORDER BY artifact_key ASC

-- name: lc-export-chunks
SELECT * FROM {chunks} WHERE workflow_id = ? ORDER BY step_index ASC, chunk_index ASC, id ASC

-- name: lc-put-artifact
-- ArtifactStore::put: one row per (workflow, key), replaced in place.
INSERT INTO {artifacts} (workflow_id, artifact_key, kind, content, metadata, step_index)
VALUES (?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE kind = VALUES(kind), content = VALUES(content),
	metadata = VALUES(metadata), step_index = VALUES(step_index), updated_at = CURRENT_TIMESTAMP

-- name: lc-get-artifact
SELECT * FROM {artifacts} WHERE workflow_id = ? AND artifact_key = ?

-- name: lc-delete-artifact
DELETE FROM {artifacts} WHERE workflow_id = ? AND artifact_key = ?

-- name: lc-artifact-keys
-- ArtifactStore::summary: the keys, sorted.
SELECT artifact_key FROM {artifacts} WHERE workflow_id = ? ORDER BY artifact_key ASC

-- name: lc-workflow-statuses
SELECT id, status FROM {workflows} WHERE id IN (?)

-- name: lc-signals-of
SELECT signal_name, payload FROM {signals} WHERE workflow_id = ? ORDER BY id ASC

-- name: lc-count-workflows-by-status
SELECT COUNT(*) FROM {workflows} WHERE status = ?

-- name: lc-truncate-workflows
-- Benchmarks only: empties the workflow tables.
TRUNCATE TABLE {workflows}

-- name: lc-truncate-workflow-events
TRUNCATE TABLE {workflow_events}

-- name: lc-truncate-dispatch-keys
TRUNCATE TABLE {workflow_dispatch_keys}

-- name: lc-touch-stale-step
-- A stale for_each branch the caller buries itself, after the commit: its
-- reserved_at is refreshed so a concurrent sweep does not take it again.
UPDATE {jobs} SET reserved_at = NOW() WHERE id = ?
