-- Resource profiles for the plugin's memory and time admission
-- (ResourceManager::handler_profile; queuety/resource_admission.go).

-- name: handler-resource-profile
-- A handler's `completed` log rows since the profile window's start: how
-- many, their average duration and their largest memory peak, as the
-- plugin's worker reads them before it admits a job. NULL averages and
-- peaks (no rows, or rows without them) read as 0.
SELECT COUNT(*) AS sample_count,
	COALESCE(ROUND(AVG(duration_ms)), 0) AS avg_duration_ms,
	COALESCE(MAX(memory_peak_kb), 0) AS max_memory_peak_kb
FROM {logs}
WHERE handler = ? AND event = 'completed' AND created_at >= ?
