-- The database server itself: version, process, time zone, and the schema
-- checks of the migration. Constants in queries_server.go.

-- name: server-version
SELECT VERSION()

-- name: server-process
-- Where the server keeps its pid file and the host it runs on: bench reads
-- the server's CPU time from /proc when that host is this machine.
SELECT @@pid_file, @@hostname

-- name: server-utc-offset
-- Seconds between the server's default NOW() and UTC, read on a connection
-- that did not set time_zone.
SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())

-- name: column-exists
SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = {database} AND TABLE_NAME = ? AND COLUMN_NAME = ?

-- name: index-exists
SELECT COUNT(*) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = {database} AND TABLE_NAME = ? AND INDEX_NAME = ?

-- name: table-exists
SELECT COUNT(*) FROM information_schema.TABLES
WHERE TABLE_SCHEMA = {database} AND TABLE_NAME = ?
