<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Per-handler rate limits counted as the plugin counts them: a handler
 * is limited when its completed runs (log rows) in the current window
 * reach the maximum. Workers (`queuety work`, the plugin's) enforce the
 * limits of the `rate_limit` a job was dispatched with; this is for
 * asking.
 */
class RateLimiter
{
    /** @var array<string, array{max: int, window: int}> */
    private array $limits = [];

    public function __construct(private readonly Connection $conn)
    {
    }

    public function register(string $handler, int $max_executions, int $window_seconds): void
    {
        $this->limits[$handler] = ['max' => $max_executions, 'window' => $window_seconds];
    }

    public function is_registered(string $handler): bool
    {
        return isset($this->limits[$handler]);
    }

    public function is_limited(string $handler): bool
    {
        if (!isset($this->limits[$handler])) {
            return false;
        }
        $limit = $this->limits[$handler];
        $table = $this->conn->table(Config::table_logs());
        $stmt = $this->conn->pdo()->prepare("SELECT COUNT(*) FROM {$table} WHERE handler = :handler AND event = 'completed' AND created_at >= :since");
        $stmt->execute(['handler' => $handler, 'since' => gmdate('Y-m-d H:i:s', time() - $limit['window'])]);
        return (int) $stmt->fetchColumn() >= $limit['max'];
    }
}
