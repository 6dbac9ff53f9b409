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
