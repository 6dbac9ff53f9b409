-- The statements of the scratch databases `queuety bench` and `queuety dev`
-- run in (scratch.go): the marker table (MarkerTable) that says which tool
-- may empty or fill which jobs table, the emptiness check before a tool
-- takes a database, and creating and dropping the database itself.
-- /*name*/ is a table or database name, backquoted at the call.

-- name: scratch-marker-count
SELECT COUNT(*) FROM {db.}`queuety_go_markers` WHERE tool = ? AND jobs_table = ?

-- name: scratch-base-tables
-- Every table of the connection's database, views left out.
SELECT TABLE_NAME FROM information_schema.TABLES
WHERE TABLE_SCHEMA = {database} AND TABLE_TYPE = 'BASE TABLE'
ORDER BY TABLE_NAME

-- name: scratch-table-has-rows
-- 1 when the table holds a row, 0 when empty: reads at most one row.
SELECT COUNT(*) FROM (SELECT 1 FROM {db.}/*name*/ LIMIT 1) t

-- name: scratch-create-markers
CREATE TABLE IF NOT EXISTS {db.}`queuety_go_markers` (
	tool VARCHAR(16) NOT NULL, jobs_table VARCHAR(64) NOT NULL, marked_at DATETIME NOT NULL,
	PRIMARY KEY (tool, jobs_table)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci

-- name: scratch-mark
INSERT IGNORE INTO {db.}`queuety_go_markers` (tool, jobs_table, marked_at) VALUES (?, ?, UTC_TIMESTAMP())

-- name: create-database
-- The daemon's tables are utf8mb4 like WordPress's; a database created
-- here gets that default.
CREATE DATABASE IF NOT EXISTS /*name*/ CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci

-- name: drop-database
DROP DATABASE IF EXISTS /*name*/
