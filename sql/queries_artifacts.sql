-- name: artifacts-of
-- ArtifactStore::list: a workflow's artifacts by key.
SELECT * FROM {artifacts} WHERE workflow_id = ? ORDER BY artifact_key ASC
