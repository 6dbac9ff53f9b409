<?php

declare(strict_types=1);

namespace Queuety\Middleware;

use Queuety\Config;
use Queuety\Contracts\Middleware;
use Queuety\Queuety;

/**
 * Stops running a job class once it threw $max_attempts times within
 * $decay_minutes: the count is the `locks` row
 * `throttle_exceptions:<class>` whose owner is the count as a string, as
 * the plugin keeps it. A throttled run fails without raising the count.
 */
class ThrottlesExceptions implements Middleware
{
    public function __construct(
        private readonly int $max_attempts = 10,
        private readonly int $decay_minutes = 10,
    ) {
    }

    public function handle(object $job, \Closure $next): void
    {
        $key = 'throttle_exceptions:' . get_class($job);
        $count = $this->count($key);
        if ($count >= $this->max_attempts) {
            throw new \RuntimeException(sprintf('Too many exceptions for %s (%d in %d minutes). Throttled.', get_class($job), $count, $this->decay_minutes));
        }
        try {
            $next($job);
        } catch (\Throwable $e) {
            $this->increment($key);
            throw $e;
        }
    }

    private function count(string $key): int
    {
        try {
            $conn = Queuety::connection();
            $stmt = $conn->pdo()->prepare('SELECT owner FROM ' . $conn->table(Config::table_locks()) . ' WHERE lock_key = :key AND expires_at > NOW()');
            $stmt->execute(['key' => $key]);
            $row = $stmt->fetch(\PDO::FETCH_ASSOC);
            return is_array($row) && is_scalar($row['owner'] ?? null) ? (int) $row['owner'] : 0;
        } catch (\Throwable) {
            return 0; // counting is best effort, as in the plugin
        }
    }

    private function increment(string $key): void
    {
        try {
            $conn = Queuety::connection();
            $expires = gmdate('Y-m-d H:i:s', time() + $this->decay_minutes * 60);
            $conn->pdo()->prepare('INSERT INTO ' . $conn->table(Config::table_locks()) . " (lock_key, owner, expires_at) VALUES (:key, '1', :expires_at)"
                . ' ON DUPLICATE KEY UPDATE owner = CAST(CAST(owner AS UNSIGNED) + 1 AS CHAR), expires_at = :expires_at2')
                ->execute(['key' => $key, 'expires_at' => $expires, 'expires_at2' => $expires]);
        } catch (\Throwable) {
        }
    }
}
