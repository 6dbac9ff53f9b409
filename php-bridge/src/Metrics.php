<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * Handler metrics from the logs table, as the plugin computes them:
 * throughput, mean and p95 duration of completed runs, error rate
 * (failed and buried over all three), over the last N minutes.
 */
class Metrics
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /** Completed runs per minute. */
    public function throughput(?string $handler = null, int $minutes = 60): float
    {
        [$where, $params] = $this->window("event = 'completed'", $handler, $minutes);
        $count = (int) $this->value("SELECT COUNT(*) FROM %s WHERE {$where}", $params);
        return $minutes === 0 ? 0.0 : $count / $minutes;
    }

    public function average_duration(?string $handler = null, int $minutes = 60): float
    {
        [$where, $params] = $this->window("event = 'completed' AND duration_ms IS NOT NULL", $handler, $minutes);
        return (float) $this->value("SELECT AVG(duration_ms) FROM %s WHERE {$where}", $params);
    }

    /** The nearest-rank 95th percentile of completed runs' durations. */
    public function p95_duration(?string $handler = null, int $minutes = 60): float
    {
        [$where, $params] = $this->window("event = 'completed' AND duration_ms IS NOT NULL", $handler, $minutes);
        $count = (int) $this->value("SELECT COUNT(*) FROM %s WHERE {$where}", $params);
        if ($count === 0) {
            return 0.0;
        }
        $index = max(0, min((int) ceil(0.95 * $count) - 1, $count - 1));
        return (float) $this->value("SELECT duration_ms FROM %s WHERE {$where} ORDER BY duration_ms ASC LIMIT 1 OFFSET {$index}", $params);
    }

    public function error_rate(?string $handler = null, int $minutes = 60): float
    {
        [$where, $params] = $this->window("event IN ('completed', 'failed', 'buried')", $handler, $minutes);
        $stmt = $this->conn->pdo()->prepare(sprintf("SELECT event, COUNT(*) AS cnt FROM %s WHERE {$where} GROUP BY event", $this->conn->table(Config::table_logs())));
        $stmt->execute($params);
        $completed = $failed = 0;
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            if ($row['event'] === 'completed') {
                $completed = (int) $row['cnt'];
            } else {
                $failed += (int) $row['cnt'];
            }
        }
        $total = $completed + $failed;
        return $total === 0 ? 0.0 : $failed / $total;
    }

    /**
     * Per handler: completed, failed (failed + buried), avg_ms, p95_ms and
     * error_rate.
     *
     * @return list<array{handler: string, completed: int, failed: int, avg_ms: float, p95_ms: float, error_rate: float}>
     */
    public function handler_stats(int $minutes = 60): array
    {
        [$where, $params] = $this->window("event IN ('completed', 'failed', 'buried') AND handler != ''", null, $minutes);
        $stmt = $this->conn->pdo()->prepare(sprintf(
            "SELECT handler, event, COUNT(*) AS cnt, AVG(duration_ms) AS avg_ms FROM %s WHERE {$where} GROUP BY handler, event",
            $this->conn->table(Config::table_logs())
        ));
        $stmt->execute($params);
        $handlers = [];
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            $h = (string) $row['handler'];
            $handlers[$h] ??= ['handler' => $h, 'completed' => 0, 'failed' => 0, 'avg_ms' => 0.0];
            if ($row['event'] === 'completed') {
                $handlers[$h]['completed'] = (int) $row['cnt'];
                $handlers[$h]['avg_ms'] = round((float) $row['avg_ms'], 2);
            } else {
                $handlers[$h]['failed'] += (int) $row['cnt'];
            }
        }
        $out = [];
        foreach ($handlers as $h => $data) {
            $total = $data['completed'] + $data['failed'];
            $out[] = $data + [
                'p95_ms' => $this->p95_duration($h, $minutes),
                'error_rate' => $total > 0 ? round($data['failed'] / $total, 4) : 0.0,
            ];
        }
        return $out;
    }

    /** @return array{0: string, 1: array<string, mixed>} */
    private function window(string $where, ?string $handler, int $minutes): array
    {
        $params = ['since' => gmdate('Y-m-d H:i:s', time() - $minutes * 60)];
        $where .= ' AND created_at >= :since';
        if ($handler !== null) {
            $where .= ' AND handler = :handler';
            $params['handler'] = $handler;
        }
        return [$where, $params];
    }

    /** @param array<string, mixed> $params */
    private function value(string $sql, array $params): mixed
    {
        $stmt = $this->conn->pdo()->prepare(sprintf($sql, $this->conn->table(Config::table_logs())));
        $stmt->execute($params);
        $v = $stmt->fetchColumn();
        return $v === false || $v === null ? 0 : $v;
    }
}
