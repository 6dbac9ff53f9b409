-- Statements of the many-sites supervisor (queuety.Sites). They name tables
-- of several sites at once, or WordPress's own network tables, so they are
-- kept out of the per-site catalogue (queries*.sql) and rendered by the
-- functions of sites.go.

-- name: any-due-site
-- One site's part of the batched idle look: any-due for one jobs table,
-- answering with the site's index. AnyDueAcross (sites.go) joins these with
-- UNION ALL so every idle site of a database server costs one round trip
-- between them.
(SELECT ? AS site FROM {jobs} FORCE INDEX (idx_qgo_claim)
WHERE queue IN (?) AND status = 'pending' AND available_at <= NOW()
LIMIT 1)

-- name: webhooks-site
-- One site's part of the batched webhooks read: webhooks-list of one
-- webhooks table, each row with the site's index. Sites reads the
-- registrations of every site of a server in one round trip, in place of
-- each site's own refresh (rows are put in id order by the caller: an
-- ORDER BY inside a UNION ALL part is not kept).
(SELECT ? AS site, id, event, url, created_at FROM {webhooks})

-- name: open-jobs-site
-- One site's part of the batched count of open jobs (the site label of
-- /metrics, /sites): metrics-jobs of one jobs table, each row with the
-- site's index. A range of idx_status (pending, processing, failed,
-- buried), never the completed rows, as for one site.
(SELECT ? AS site, queue, status, COUNT(*) AS n FROM {jobs}
WHERE status IN ('pending', 'processing', 'failed', 'buried')
GROUP BY queue, status)

-- name: heartbeat-workers
-- The batched registration heartbeat: heartbeat-worker for the workers of
-- many sites in one multi-table UPDATE. Each site's table is LEFT JOINed
-- to one row (heartbeat-workers-join) and set as heartbeat-worker sets it
-- (heartbeat-workers-set); a site whose row is gone joins nothing and
-- writes nothing (registered-workers tells it). At most 60 sites a
-- statement: a join takes at most 61 tables.
UPDATE (SELECT 1 AS one) AS one
{joins}
SET {sets}

-- name: heartbeat-workers-join
LEFT JOIN {workers} AS {w} ON {w}.namespace = ? AND {w}.worker_id = ?

-- name: heartbeat-workers-set
{w}.last_heartbeat_at = ?, {w}.updated_at = ?,
	{w}.task_slots = COALESCE(?, {w}.task_slots), {w}.process_metrics = COALESCE(?, {w}.process_metrics)

-- name: registered-worker
-- One site's part of the batched check after a batched heartbeat: the
-- site's index when its worker is still registered (get-worker's row).
(SELECT ? AS site FROM {workers} WHERE namespace = ? AND worker_id = ?)

-- name: schedules-due-site
-- One site's part of the batched schedules look: the site's index when one
-- of its schedules is due (schedules-due's rows, at the site's own now):
-- only those sites run the scheduler's tick.
(SELECT ? AS site FROM {schedules} WHERE enabled = 1 AND next_run <= ? LIMIT 1)

-- name: site-counts
-- One site's row of the dashboard's all-sites overview: its open jobs by
-- status, its processing rows not heard from since its own stale cutoff,
-- and how long its oldest due pending job has waited (NULL: none is due).
-- The dashboard joins these with UNION ALL, one statement for the sites of
-- a server, each table named with its database. Every count is a range of
-- one index (idx_status; idx_reserved for the stale rows) read up to a cap
-- (the ? of each LIMIT), and the oldest pending job is looked for among the
-- site's first 1,000 pending rows in id order (the first dispatched), so a
-- site's part stays a few bounded index ranges whatever its backlog.
(SELECT ? AS site,
	(SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'pending' LIMIT ?) AS c) AS pending,
	(SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'processing' LIMIT ?) AS c) AS processing,
	(SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'failed' LIMIT ?) AS c) AS failed,
	(SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'buried' LIMIT ?) AS c) AS buried,
	(SELECT COUNT(*) FROM (SELECT 1 FROM {jobs} WHERE status = 'processing' AND reserved_at < ? LIMIT ?) AS c) AS stale,
	(SELECT GREATEST(0, TIMESTAMPDIFF(SECOND, MIN(p.available_at), NOW())) FROM (
		SELECT available_at FROM {jobs} FORCE INDEX (idx_status)
		WHERE status = 'pending' ORDER BY id LIMIT 1000) AS p
	WHERE p.available_at <= NOW()) AS oldest_pending)

-- name: exists-site
-- One site's part of a batched look at the first read of one of its
-- worker's loops: the site's index when that read (a catalogue query for
-- the site's tables, spliced at /*read*/ with its arguments) finds a row.
-- Only those sites run the loop's round; the others' would have found
-- nothing.
(SELECT ? AS site FROM DUAL WHERE EXISTS (/*read*/))

-- name: stale-site
-- One site's part of the batched stale look: the site's index when it has
-- a row its stale sweep would take (find-stale's condition, at the site's
-- own cutoff and clock; with workflows, the second argument 1,
-- lc-find-stale-workflow-steps' step rows too). A plain read: the sweep
-- locks the rows it takes itself.
(SELECT ? AS site FROM {jobs}
WHERE status = 'processing' AND (workflow_id IS NULL OR ?)
	AND (reserved_at < ? OR (reserved_at IS NULL AND available_at < ?) OR reserved_at > ?)
LIMIT 1)

-- name: signals-due-site
-- One site's part of the batched signal look: the site's index when a
-- workflow waiting for a signal has a signal row after the site's poller's
-- watermark, the rows its poll (signal-waiters-between) would resume.
-- Read from the waiting workflows (idx_status; few) and their signals
-- (idx_workflow_signal), not from the signals after the watermark, which
-- stays where it was while no poll runs.
(SELECT ? AS site FROM {workflows} AS w
WHERE w.status = 'waiting_for_signal'
	AND EXISTS (SELECT 1 FROM {signals} AS s WHERE s.workflow_id = w.id AND s.id > ?)
LIMIT 1)

-- name: network-blogs
-- The subsites of a multisite network that WordPress serves: wp_blogs
-- rows neither archived, deleted nor marked spam (ms-site's
-- get_sites(['archived' => 0, 'deleted' => 0, 'spam' => 0])).
SELECT blog_id, site_id, domain, path FROM /*blogs*/
WHERE archived = 0 AND deleted = 0 AND spam = 0
ORDER BY blog_id

-- name: tables-present
-- Which of these tables exist in the connection's database: a subsite
-- whose Queuety tables are missing (the plugin never activated there) is
-- reported, not served.
SELECT table_name AS name FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name IN (?)

-- name: server-write-counters
-- The server's counters of rows written and transactions committed, every
-- client's, for the idle look's gate (queuety.Sites): while none of them
-- moves, no job became due by a write since the last look. Handler_write,
-- _update and _delete count row changes in every engine; the server's own
-- temporary tables are counted apart (Handler_tmp_*), so a SELECT, this
-- statement and the batched look leave them still. Com_commit and
-- Com_xa_commit move when a transaction's COMMIT is sent, after its rows
-- were counted; wsrep_last_committed (Galera) when a write set commits on
-- any node. SHOW GLOBAL STATUS needs no privilege.
SHOW GLOBAL STATUS WHERE Variable_name IN
	('Handler_write', 'Handler_update', 'Handler_delete', 'Com_commit', 'Com_xa_commit', 'wsrep_last_committed')

-- name: bench-noise-table
-- bench sites --noise: a table of its own, in a database of its own, that
-- a neighbour writes into while the daemon idles (/*name*/: the table,
-- with its database).
CREATE TABLE IF NOT EXISTS /*name*/ (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, at DATETIME(6) NOT NULL)

-- name: bench-noise-row
INSERT INTO /*name*/ (at) VALUES (NOW(6))

-- name: server-questions
-- The statements the server has run since it started, every client's
-- (bench sites reads it before and after an idle window).
SHOW GLOBAL STATUS WHERE Variable_name = 'Questions'

-- name: server-connections
-- The client connections whose database is one of those named like ?
-- (bench sites counts the daemon's this way: every connection of a site's
-- pool and of a server's look has one of its databases).
SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB LIKE ?
