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
