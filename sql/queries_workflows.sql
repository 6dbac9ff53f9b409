-- Workflows (the engine in workflow/engine). Statements mirror Queuety's
-- Workflow.php: the workflow row and the job row are locked FOR UPDATE and
-- every change of one step happens in one transaction. Constants in
-- queries_workflows.go.

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
