-- The cursor of a for_each plan inserted in pages (for_each.go, the
-- for_each_plans table). Every statement runs in the step transaction
-- that inserts a page, under the placeholder job's row lock.

-- name: lock-for-each-plan
SELECT next_item FROM {for_each_plans} WHERE job_id = ? FOR UPDATE

-- name: save-for-each-plan
INSERT INTO {for_each_plans} (job_id, workflow_id, step_index, next_item, total_items, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE next_item = VALUES(next_item), total_items = VALUES(total_items), updated_at = VALUES(updated_at)

-- name: delete-for-each-plan
DELETE FROM {for_each_plans} WHERE job_id = ?

-- name: lock-workflow-position
-- A page after the first locks the workflow without its state: the plan
-- goes on only while the workflow is live and still at the step.
SELECT status, current_step FROM {workflows} WHERE id = ? FOR UPDATE

-- name: renew-for-each-lease
-- A page of a long plan renews the placeholder's lease, in the page's
-- transaction: the plan holds the job for minutes, and a stale sweep (ours
-- or PHP's, which would plan from item 0 again) must not take it while
-- pages still commit. The caller checked under the row lock that its
-- attempt still holds the job.
UPDATE {jobs} SET reserved_at = NOW() WHERE id = ?

-- name: delete-for-each-plans-of-workflow
-- A workflow that failed or was cancelled buries its jobs, placeholder
-- included: a cursor left behind would outlive it, and a placeholder run
-- again after a retry must plan every item without a result, not resume
-- past branches that were buried.
DELETE FROM {for_each_plans} WHERE workflow_id = ?

-- name: orphan-for-each-plans-where
-- Cursors no plan will read again: the workflow is gone, ended or past the
-- step (PHP failed or cancelled it, or retention purged it), or the
-- placeholder job is gone or completed. A live plan's cursor is never one
-- of them: its page transaction locks the workflow row first and ends the
-- plan itself when the workflow moved on. Spliced at /*orphan*/.
NOT EXISTS (
	SELECT 1 FROM {workflows} AS wf
	WHERE wf.id = {for_each_plans}.workflow_id AND wf.status IN ('running', 'paused') AND wf.current_step = {for_each_plans}.step_index
) OR NOT EXISTS (
	SELECT 1 FROM {jobs} AS job
	WHERE job.id = {for_each_plans}.job_id AND job.status <> 'completed'
)

-- name: delete-orphan-for-each-plans
-- The stale sweep drops the orphan cursors: nothing else removes them.
DELETE FROM {for_each_plans} WHERE /*orphan*/

-- name: any-orphan-for-each-plan
-- Whether the stale sweep has an orphan cursor to drop (a site's batched
-- stale look).
SELECT 1 FROM {for_each_plans} WHERE /*orphan*/ LIMIT 1
