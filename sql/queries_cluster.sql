-- Clustered servers (MariaDB Galera, Percona XtraDB Cluster): what the
-- daemon runs instead of, or besides, single-server statements there.
-- Constants in queries_cluster.go; see cluster.go for why.

-- name: cluster-detect
-- wsrep_on is ON only on a node of a running cluster; a server without
-- wsrep (MySQL) does not know the variable (1193), which means no cluster.
SELECT @@wsrep_on

-- name: cluster-admission-lock
-- A claim's admission lock on a cluster (see ClaimTx.lockNamed): the row of
-- the lock, in the plugin's locks table under a key no plugin key starts
-- with, written inside the claim transaction (owner is a token of the claim,
-- so the row always changes: a write that leaves it as it was is no write
-- to the cluster). On one node the row lock
-- serializes admissions like GET_LOCK did; across nodes two claims that
-- both wrote the row cannot both commit (the second fails certification),
-- which GET_LOCK, kept by each node for itself, never gave. The lock wait
-- is bounded like GET_LOCK's timeout (whole seconds; 0 does not wait),
-- spliced in for /*wait*/0: SET STATEMENT takes no placeholder.
SET STATEMENT innodb_lock_wait_timeout = /*wait*/0 FOR
INSERT INTO {locks} (lock_key, owner, acquired_at) VALUES (?, ?, NOW())
ON DUPLICATE KEY UPDATE owner = VALUES(owner), acquired_at = VALUES(acquired_at)

-- name: cluster-lease-create
-- A lease's row, expired, made once (see Store.Lease).
INSERT IGNORE INTO {locks} (lock_key, owner, acquired_at, expires_at) VALUES (?, '', NOW(), NOW())

-- name: cluster-lease-take
-- Takes the lease when it is free (expired or released) or ours: a
-- conditional UPDATE, so on a cluster two takers on two nodes cannot both
-- succeed (the loser's write fails certification, and when the server
-- retries the autocommit statement it finds the lease held).
UPDATE {locks} SET owner = ?, acquired_at = NOW(), expires_at = NOW() + INTERVAL ? SECOND
WHERE lock_key = ? AND (expires_at IS NULL OR expires_at <= NOW() OR owner = ?)

-- name: cluster-lease-release
UPDATE {locks} SET expires_at = NOW() WHERE lock_key = ? AND owner = ?

-- name: claim-settle
-- After a claim whose COMMIT went unanswered (the connection died during
-- it): the rows of the claim that are processing under this worker. With
-- the attempt the claim spent (compared by the caller), this tells a claim
-- that committed from one that did not. On a cluster the read is causal
-- (wsrep_sync_wait, see Store.causal): the node waits until it has applied
-- every write the cluster committed before the read, the claim's included.
SELECT id, attempts FROM {jobs} WHERE id IN (?) AND status = 'processing' AND reserved_by = ?

-- name: cluster-sync-wait
-- Made causal (Store.causal) and sent on its own, before BEGIN: the node
-- applies every write the cluster committed before it, and the transaction
-- that follows on the same connection sees them (see Store.inFencedTx).
SELECT 1

-- name: claim-which-slice
-- Appended to /*which*/ when the claim reads its node's slice first (see
-- ClaimParams.Slices): CRC32 spreads ids evenly whatever their step (a
-- Galera node numbers its rows auto_increment_increment apart, so id
-- modulo the cluster size would put all of one node's rows in one slice).
(CRC32(job.id) % ? = ?)

-- name: cluster-slice
-- This node's place in the cluster (0 … size-1) and the cluster's size.
SELECT
	(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_INDEX') AS idx,
	(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE') AS size

-- name: cluster-lock-owner
-- The owner written in a lock row (tests: each claim writes its own).
SELECT owner FROM {locks} WHERE lock_key = ?
