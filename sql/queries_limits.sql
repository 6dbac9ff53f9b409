-- Rate limits and cost budgets, checked when a claim admits its rows
-- (queuety/admission.go), from the rows the plugin's RateLimiter and
-- ResourceManager read.

-- name: claim-which-skip-handlers
-- Appended to /*which*/ for handlers a claim must not take: found rate
-- limited earlier in the claim, or left to PHP (state machine actions a
-- worker that claims everything cannot run).
job.handler NOT IN (?)

-- name: claim-which-skip-ids
-- Appended to /*which*/ when a queue is read again in one claim: the claim's
-- own row locks do not hide the rows it already took or deferred.
job.id NOT IN (?)

-- name: rate-limit-used
-- RateLimiter::refresh_from_db (the handler's `completed` log rows since now
-- minus the window), plus the handler's jobs processing now: those finish
-- inside the window too, so a batched claim or a second worker cannot start
-- more than the limit before the first ones are logged.
-- The third term keeps the limit's slots in the claim order: the handler's
-- claimable rows ahead of the claim's first one in its queue (by priority,
-- then id) that the claim did not see are locked by a concurrent claim
-- (SKIP LOCKED hid them), so their slots are kept for them. Without it, a
-- second claim lane could take the one slot of a limit for a newer job
-- while the older one waits for the window to pass. Forced onto the claim's
-- index, it reads the range the claim read ahead of that row, not every
-- pending job of the handler (a rate-limited handler's backlog can be
-- long).
SELECT (SELECT COUNT(*) FROM {logs}
		WHERE handler = ? AND event = 'completed' AND created_at >= NOW() - INTERVAL ? SECOND)
	+ (SELECT COUNT(*) FROM {jobs} WHERE handler = ? AND status = 'processing')
	+ (SELECT COUNT(*) FROM {jobs} AS job FORCE INDEX (idx_qgo_claim)
		WHERE job.handler = ? AND job.queue = ? AND job.status = 'pending'
			AND job.available_at <= NOW() AND job.session_id IS NULL
			AND (job.priority > ? OR (job.priority = ? AND job.id < ?))
			AND (job.depends_on IS NULL
				OR (SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on) = 'completed'))

-- name: queue-cost-processing
-- ResourceManager::active_queue_cost_units.
SELECT COALESCE(SUM(cost_units), 0) FROM {jobs} WHERE queue = ? AND status = 'processing'

-- name: group-cost-processing
-- ResourceManager::active_group_cost_units.
SELECT COALESCE(SUM(cost_units), 0) FROM {jobs} WHERE concurrency_group = ? AND status = 'processing'
