<?php

declare(strict_types=1);

namespace Queuety\Middleware;

use Queuety\Config;
use Queuety\Contracts\Middleware;
use Queuety\Queuety;

/**
 * Runs the job only while it holds the `locks` row `$key`, which expires
 * after $release_after seconds (a crashed worker's lock frees itself). The
 * row is the plugin's: {lock_key, owner: 32 hex chars, acquired_at,
 * expires_at}, deleted when the job ends. When another job holds it, this
 * one is skipped (the worker completes it without running it).
 */
class WithoutOverlapping implements Middleware
{
    public function __construct(
        private readonly string $key,
        private readonly int $release_after = 300,
    ) {
    }

    public function handle(object $job, \Closure $next): void
    {
        $owner = bin2hex(random_bytes(16));
        $conn = Queuety::connection();
        $table = $conn->table(Config::table_locks());
        $conn->pdo()->prepare("DELETE FROM {$table} WHERE lock_key = :lock_key AND expires_at IS NOT NULL AND expires_at < NOW()")
            ->execute(['lock_key' => $this->key]);
        try {
            $conn->pdo()->prepare("INSERT INTO {$table} (lock_key, owner, acquired_at, expires_at) VALUES (:lock_key, :owner, NOW(), :expires_at)")
                ->execute(['lock_key' => $this->key, 'owner' => $owner, 'expires_at' => gmdate('Y-m-d H:i:s', time() + $this->release_after)]);
        } catch (\PDOException) {
            return; // held by another job
        }
        try {
            $next($job);
        } finally {
            $conn->pdo()->prepare("DELETE FROM {$table} WHERE lock_key = :lock_key AND owner = :owner")
                ->execute(['lock_key' => $this->key, 'owner' => $owner]);
        }
    }
}
