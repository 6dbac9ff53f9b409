-- Retention (issue 14): what the sweep inside `work` and `purge` delete.
-- Each kind has a condition (spliced at /*where*/ into its count and its
-- delete) that keeps every row another live row still needs: a job that a
-- job yet to complete (pending, running or buried) depends on, with the
-- finished workflow it is a step of; the jobs, events and log rows of a
-- workflow that is not finished; the log rows of a job that is not
-- finished; a finished workflow a live parent or waiter still reads.
-- Deletes go in small slices, each its own autocommit statement, so no
-- lock is held for long: a plain read picks the oldest ids (LIMIT ?), and
-- the DELETE names them and checks the condition again. A single DELETE …
-- WHERE … LIMIT is no good: MariaDB runs a DELETE whose subquery reads its
-- own table in two passes, the first over every matching row (minutes on a
-- table of 200,000 old jobs, measured).
-- The single-table DELETE cannot alias its table, so the conditions name
-- the outer table in full.

-- name: retention-lock
-- One daemon per database sweeps at a time: a named lock, never waited for.
-- GET_LOCK names are server-wide, so the name carries the database and the
-- jobs table (64 characters at most).
SELECT GET_LOCK(CONCAT('queuety-go:retention:', LEFT(SHA2(CONCAT({database}, '.', ?), 256), 40)), 0)

-- name: retention-unlock
SELECT RELEASE_LOCK(CONCAT('queuety-go:retention:', LEFT(SHA2(CONCAT({database}, '.', ?), 256), 40)))

-- name: retention-completed-where
-- Completed jobs finished before the cutoff, but not one a job that has yet
-- to complete depends on (the claim needs its dependency completed, so a
-- missing one would block the dependent for ever; a buried dependent counts:
-- an operator's retry makes it pending again), nor a step job of a workflow
-- that is not finished.
{jobs}.status = 'completed' AND {jobs}.completed_at < ?
AND NOT EXISTS (SELECT 1 FROM {jobs} AS dep WHERE dep.depends_on = {jobs}.id AND dep.status <> 'completed')
AND ({jobs}.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM {workflows} AS wf WHERE wf.id = {jobs}.workflow_id AND wf.status NOT IN ('completed', 'failed', 'cancelled')))

-- name: retention-buried-where
-- Buried jobs buried before the cutoff, with the same exceptions.
{jobs}.status = 'buried' AND {jobs}.failed_at < ?
AND NOT EXISTS (SELECT 1 FROM {jobs} AS dep WHERE dep.depends_on = {jobs}.id AND dep.status <> 'completed')
AND ({jobs}.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM {workflows} AS wf WHERE wf.id = {jobs}.workflow_id AND wf.status NOT IN ('completed', 'failed', 'cancelled')))

-- name: retention-logs-where
-- Log rows written before the cutoff, but not those of a job still pending,
-- running or failed (unclaim deletes its started row) nor of a workflow
-- that is not finished.
{logs}.created_at < ?
AND ({logs}.job_id IS NULL OR NOT EXISTS (SELECT 1 FROM {jobs} AS job WHERE job.id = {logs}.job_id AND job.status NOT IN ('completed', 'buried')))
AND ({logs}.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM {workflows} AS wf WHERE wf.id = {logs}.workflow_id AND wf.status NOT IN ('completed', 'failed', 'cancelled')))

-- name: retention-events-where
-- Workflow events written before the cutoff, of finished (or deleted)
-- workflows only: a live workflow's events are its replay history.
{workflow_events}.created_at < ?
AND NOT EXISTS (SELECT 1 FROM {workflows} AS wf WHERE wf.id = {workflow_events}.workflow_id AND wf.status NOT IN ('completed', 'failed', 'cancelled'))

-- name: retention-workflows-where
-- Finished workflows (completed, failed, cancelled: cancel sets
-- completed_at) finished before the cutoff, but not a child whose parent is
-- live, one a live workflow waits for, one with a job not finished, or one
-- with a step job that a job of another workflow (or no workflow) depends on
-- and that has yet to complete (pending, running or buried: a retry makes a
-- buried dependent pending again, and it would wait for ever on a deleted
-- dependency). Its own buried step jobs depending on each other do not hold
-- it.
{workflows}.status IN ('completed', 'failed', 'cancelled')
AND COALESCE({workflows}.completed_at, {workflows}.failed_at) < ?
AND ({workflows}.parent_workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM {workflows} AS parent WHERE parent.id = {workflows}.parent_workflow_id AND parent.status NOT IN ('completed', 'failed', 'cancelled')))
AND NOT EXISTS (SELECT 1 FROM {workflow_dependencies} AS d JOIN {workflows} AS waiter ON waiter.id = d.waiting_workflow_id WHERE d.dependency_workflow_id = {workflows}.id AND waiter.status NOT IN ('completed', 'failed', 'cancelled'))
AND NOT EXISTS (SELECT 1 FROM {jobs} AS job WHERE job.workflow_id = {workflows}.id AND job.status NOT IN ('completed', 'buried'))
AND NOT EXISTS (SELECT 1 FROM {jobs} AS step JOIN {jobs} AS dep ON dep.depends_on = step.id WHERE step.workflow_id = {workflows}.id AND dep.status <> 'completed' AND NOT (dep.workflow_id <=> {workflows}.id))

-- name: retention-count-jobs
SELECT COUNT(*) FROM {jobs} WHERE /*where*/

-- name: retention-select-jobs
SELECT id FROM {jobs} WHERE /*where*/ ORDER BY id LIMIT ?

-- name: retention-delete-completed
-- The slice's rows that are still what the read saw. The dependency check
-- stays in the read: a DELETE whose subquery reads its own table is slow
-- even for 500 ids (seconds, measured), and a dependent dispatched on a
-- 7-day-old completed job in the milliseconds between is the one race.
DELETE FROM {jobs} WHERE id IN (?) AND status = 'completed' AND completed_at < ?

-- name: retention-delete-buried
DELETE FROM {jobs} WHERE id IN (?) AND status = 'buried' AND failed_at < ?

-- name: retention-count-logs
SELECT COUNT(*) FROM {logs} WHERE /*where*/

-- name: retention-select-logs
SELECT id FROM {logs} WHERE /*where*/ ORDER BY id LIMIT ?

-- name: retention-delete-logs
DELETE FROM {logs} WHERE id IN (?) AND /*where*/

-- name: retention-count-events
SELECT COUNT(*) FROM {workflow_events} WHERE /*where*/

-- name: retention-select-events
SELECT id FROM {workflow_events} WHERE /*where*/ ORDER BY id LIMIT ?

-- name: retention-delete-events
DELETE FROM {workflow_events} WHERE id IN (?) AND /*where*/

-- name: retention-count-workflows
SELECT COUNT(*) FROM {workflows} WHERE /*where*/

-- name: retention-select-workflows
-- One slice of workflows to delete, locked so none is retried or rewound
-- while its rows go. No ORDER BY: status IN (three values) is not in id
-- order in any index, so sorting would read every old finished workflow
-- for each slice; the deletes that follow name their ids.
SELECT id FROM {workflows} WHERE /*where*/ LIMIT ? FOR UPDATE

-- name: retention-workflow-events
DELETE FROM {workflow_events} WHERE workflow_id IN (?)

-- name: retention-workflow-jobs
DELETE FROM {jobs} WHERE workflow_id IN (?) AND status IN ('completed', 'buried')

-- name: retention-workflow-signals
DELETE FROM {signals} WHERE workflow_id IN (?)

-- name: retention-workflow-dependencies
DELETE FROM {workflow_dependencies} WHERE waiting_workflow_id IN (?)

-- name: retention-workflow-dispatch-keys
DELETE FROM {workflow_dispatch_keys} WHERE workflow_id IN (?)

-- name: retention-workflow-rows
DELETE FROM {workflows} WHERE id IN (?)
