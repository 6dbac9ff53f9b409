-- Workflow history operations of the plugin's WP-CLI and facade:
-- workflow_state_at, rewind_workflow, fork_workflow and replay_workflow.

-- name: hs-state-at-step
-- WorkflowEventLog::get_state_at_step: the public state recorded when the
-- step last completed or its wait resumed.
SELECT state_after FROM {workflow_events}
WHERE workflow_id = ? AND step_index = ? AND event IN ('step_completed', 'workflow_resumed')
ORDER BY id DESC
LIMIT 1

-- name: hs-rewind-workflow
-- Workflow::rewind: the restored state runs again from the step after the
-- one rewound to; the failure is cleared.
UPDATE {workflows}
SET state = ?, current_step = ?, status = 'running', error_message = NULL, failed_at = NULL
WHERE id = ?

-- name: hs-supersede-jobs
-- Workflow::rewind buries the abandoned path's live jobs so an old worker
-- cannot continue it.
UPDATE {jobs} SET status = 'buried', error_message = 'Superseded by workflow rewind'
WHERE workflow_id = ? AND status IN ('pending', 'processing')

-- name: hs-insert-fork
-- Workflow::fork: an independent copy at the same step.
INSERT INTO {workflows} (name, status, state, current_step, total_steps)
VALUES (?, 'running', ?, ?, ?)

-- name: hs-insert-replayed-workflow
-- WorkflowReplayer::replay: the new workflow row.
INSERT INTO {workflows} (name, status, state, current_step, total_steps, completed_at, failed_at, error_message)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)

-- name: hs-insert-replayed-event
INSERT INTO {workflow_events}
	(workflow_id, job_id, parent_event_id, step_index, step_name, step_type, handler, event, queue, attempt,
	 input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at)
VALUES (?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, NOW()))

-- name: hs-insert-replayed-log
INSERT INTO {logs}
	(job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, error_message, context, created_at)
VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, NOW()))

-- name: hs-insert-replayed-signal
INSERT INTO {signals} (workflow_id, signal_name, payload, received_at)
VALUES (?, ?, ?, COALESCE(?, NOW()))

-- name: hs-insert-replayed-dependency
INSERT INTO {workflow_dependencies} (waiting_workflow_id, step_index, dependency_workflow_id, satisfied_at, created_at)
VALUES (?, ?, ?, ?, COALESCE(?, NOW()))

-- name: hs-insert-replayed-artifact
INSERT INTO {artifacts} (workflow_id, artifact_key, kind, content, metadata, step_index, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, COALESCE(?, NOW()), COALESCE(?, NOW()))

-- name: hs-insert-replayed-chunk
INSERT INTO {chunks} (job_id, workflow_id, step_index, chunk_index, content, created_at)
VALUES (?, ?, ?, ?, ?, COALESCE(?, NOW()))

-- name: hs-insert-replay-marker
-- The workflow_replayed event that says where the copy came from.
INSERT INTO {workflow_events} (workflow_id, step_index, handler, event, output, state_after, context)
VALUES (?, ?, '__queuety_replay', 'workflow_replayed', ?, ?, ?)
