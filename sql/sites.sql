-- Statements of the many-sites supervisor (queuety.Sites). They name tables
-- of several sites at once, or WordPress's own network tables, so they are
-- kept out of the per-site catalogue (queries*.sql) and rendered by the
-- functions of sites.go.

-- name: any-due-site
-- One site's part of the batched idle look: any-due for one jobs table,
-- answering with the site's index. sites-any-due joins these with UNION ALL
-- so every idle site of a database costs one round trip between them.
(SELECT ? AS site FROM {jobs} FORCE INDEX (idx_qgo_claim)
WHERE queue IN (?) AND status = 'pending' AND available_at <= NOW()
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

-- name: server-questions
-- The statements the server has run since it started, every client's
-- (bench sites reads it before and after an idle window).
SHOW GLOBAL STATUS WHERE Variable_name = 'Questions'
