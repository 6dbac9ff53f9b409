-- queuety-go's additive extensions to the Queuety tables. PHP never reads
-- these columns and indexes; migrate adds each one only when it is missing
-- and never alters what the plugin created.
-- Each statement starts with "-- column: <table>.<name>" or "-- index: <table>.<name>".

-- column: jobs.reserved_by
-- The worker that holds the current attempt. Completions, retries and
-- heartbeats are fenced on it (with attempts), so a worker whose attempt was
-- rescued cannot overwrite the row another worker now owns.
ALTER TABLE {jobs} ADD COLUMN reserved_by VARCHAR(64) DEFAULT NULL;

-- index: jobs.idx_qgo_claim
-- In the claim's ORDER BY order (priority DESC, id ASC). Queuety's own
-- idx_queue_claim is ascending on priority, which makes InnoDB lock and sort
-- every candidate: measured 5x slower and deadlock-prone under batched claims.
ALTER TABLE {jobs} ADD INDEX idx_qgo_claim (queue, status, priority DESC, id, available_at);

-- column: jobs.session_id
-- The worker session a job is bound to (its step's or its dispatch's
-- worker_session.session_id). Such jobs are claimed only through session
-- admission, never by the ordinary claim.
ALTER TABLE {jobs} ADD COLUMN session_id VARCHAR(255) DEFAULT NULL;

-- column: jobs.worker_session
-- The normalized worker_session options (PHP-encoded JSON) the admission
-- checks: queue, requirements, lease, TTL and limits.
ALTER TABLE {jobs} ADD COLUMN worker_session TEXT DEFAULT NULL;

-- column: jobs.session_pending
-- The session id of a pending session-bound job, NULL otherwise: what the
-- session claim looks up. Virtual, so it costs nothing to store, and its
-- index entry for a plain job stays NULL whatever its status, so the hot
-- status updates of plain jobs never touch the index (an index on
-- (status, session_id) cost 10-15% of plain-job throughput).
ALTER TABLE {jobs} ADD COLUMN session_pending VARCHAR(255) AS (IF(status = 'pending', session_id, NULL)) VIRTUAL;

-- index: jobs.idx_qgo_session
-- Finds pending session-bound jobs without scanning a queue's plain jobs
-- or the session-bound jobs that already ran.
ALTER TABLE {jobs} ADD INDEX idx_qgo_session (session_pending);

-- column: jobs.session_processing
-- The session id of a processing session-bound job, NULL otherwise: what
-- the admission counts (active_activity_count) on every admission. Virtual
-- like session_pending, for the same reason: a plain job's entry stays NULL.
ALTER TABLE {jobs} ADD COLUMN session_processing VARCHAR(255) AS (IF(status = 'processing', session_id, NULL)) VIRTUAL;

-- index: jobs.idx_qgo_session_processing
-- Counts a session's running jobs without scanning every processing job.
ALTER TABLE {jobs} ADD INDEX idx_qgo_session_processing (session_processing);

-- column: workers.claims
-- What a `queuety work` process claims (a JSON object: its Go handlers or
-- all of them, workflow steps, batches), so `status` can list pending jobs
-- no live worker runs. PHP workers do not register; NULL: not said. New
-- installs get it with the table; this adds it to older ones.
ALTER TABLE {workers} ADD COLUMN claims TEXT DEFAULT NULL;
