-- Waits, signals and child workflows (the workflow engine's
-- engine_wait*.go, engine_signal*.go, engine_children*.go, the wait sweeper
-- and the signal poller). Constants in queries_waits.go.

-- name: insert-signal
-- Queuety::signal stores every signal, waiting or not.
INSERT INTO {signals} (workflow_id, signal_name, payload) VALUES (?, ?, ?)

-- name: signals-for-names
-- resolve_signal_wait_progress: the stored signals of some names, oldest first.
SELECT signal_name, payload FROM {signals}
WHERE workflow_id = ? AND signal_name IN (?)
ORDER BY id ASC

-- name: workflows-by-ids
-- fetch_workflow_rows_by_id (a plain read).
SELECT id, status, state FROM {workflows} WHERE id IN (?)

-- name: workflow-statuses-by-ids
-- The statuses a wait evaluates (states are read only once it is satisfied).
SELECT id, status FROM {workflows} WHERE id IN (?)

-- name: workflow-status
SELECT status FROM {workflows} WHERE id = ?

-- name: delete-dependencies
-- clear_workflow_dependencies.
DELETE FROM {workflow_dependencies} WHERE waiting_workflow_id = ? AND step_index = ?

-- name: insert-dependency
INSERT INTO {workflow_dependencies} (waiting_workflow_id, step_index, dependency_workflow_id) VALUES (?, ?, ?)

-- name: mark-dependency-satisfied
UPDATE {workflow_dependencies} SET satisfied_at = NOW()
WHERE waiting_workflow_id = ? AND step_index = ? AND dependency_workflow_id = ? AND satisfied_at IS NULL

-- name: wake-facts
-- A terminal workflow's wake-ups (reconcile_waiting_for_workflows_for_dependency),
-- for many at once: its status, whether a run_workflow parent may wait on it
-- (most have none, and skip that transaction), and who waits on it.
SELECT DISTINCT wf.id, wf.status, wf.parent_workflow_id IS NOT NULL AS has_parent,
	d.waiting_workflow_id, d.step_index
FROM {workflows} wf
LEFT JOIN {workflow_dependencies} d ON d.dependency_workflow_id = wf.id
WHERE wf.id IN (?)
ORDER BY wf.id, d.waiting_workflow_id, d.step_index

-- name: park-workflow
-- A wait step that is not satisfied yet: waiting_for_signal or
-- waiting_for_workflows, with its _wait context.
UPDATE {workflows} SET status = ?, state = ?, current_step = ? WHERE id = ?

-- name: resume-workflow
-- settle_wait_step when steps remain: always 'running' (even if paused).
UPDATE {workflows} SET status = 'running', state = ?, current_step = ? WHERE id = ?

-- name: waiting-for-workflows-after
-- The wait sweeper: waiting_for_workflows workflows, by id, in pages.
SELECT id, current_step FROM {workflows}
WHERE status = 'waiting_for_workflows' AND id > ?
ORDER BY id ASC
LIMIT ?

-- name: max-signal-id
SELECT COALESCE(MAX(id), 0) FROM {signals}

-- name: signal-waiters-between
-- The signal poller: workflows waiting for a signal that received one in
-- (after, upto].
SELECT DISTINCT s.workflow_id FROM {signals} s
JOIN {workflows} w ON w.id = s.workflow_id
WHERE s.id > ? AND s.id <= ? AND w.status = 'waiting_for_signal'
ORDER BY s.workflow_id ASC

-- name: child-of
-- The run_workflow link of a workflow (on_workflow_completed).
SELECT parent_workflow_id, parent_step_index FROM {workflows} WHERE id = ?

-- name: stuck-run-workflow-children
-- The wait sweeper: the newest child of a live parent parked at its
-- run_workflow step with no job left, when that child is terminal (its
-- wake-up was lost, or PHP, which never fails the parent, failed it).
SELECT c.id FROM {workflows} p
JOIN {workflows} c ON c.parent_workflow_id = p.id AND c.parent_step_index = p.current_step
WHERE p.status IN ('running', 'paused') AND c.id > ?
	AND c.status IN ('completed', 'failed', 'cancelled')
	AND c.id = (SELECT MAX(c2.id) FROM {workflows} c2
		WHERE c2.parent_workflow_id = p.id AND c2.parent_step_index = p.current_step)
	AND NOT EXISTS (SELECT 1 FROM {jobs} j
		WHERE j.workflow_id = p.id AND j.step_index = p.current_step AND j.status IN ('pending', 'processing'))
ORDER BY c.id ASC
LIMIT ?
