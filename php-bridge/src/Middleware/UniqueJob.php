<?php

declare(strict_types=1);

namespace Queuety\Middleware;

use Queuety\Config;
use Queuety\Contracts\Middleware;
use Queuety\Queuety;

/**
 * Runs the job only while it holds the `locks` row `$key` (default: the
 * job's class), which has no expiry; the plugin's row {lock_key, owner,
 * acquired_at}. When another job holds it, this one is skipped.
 */
class UniqueJob implements Middleware
{
    public function __construct(private readonly ?string $key = null)
    {
    }

    public function handle(object $job, \Closure $next): void
    {
        $key = $this->key ?? get_class($job);
        $owner = bin2hex(random_bytes(16));
        $conn = Queuety::connection();
        $table = $conn->table(Config::table_locks());
        try {
            $conn->pdo()->prepare("INSERT INTO {$table} (lock_key, owner, acquired_at) VALUES (:lock_key, :owner, NOW())")
                ->execute(['lock_key' => $key, 'owner' => $owner]);
        } catch (\PDOException) {
            return; // held by another job
        }
        try {
            $next($job);
        } finally {
            $conn->pdo()->prepare("DELETE FROM {$table} WHERE lock_key = :lock_key AND owner = :owner")
                ->execute(['lock_key' => $key, 'owner' => $owner]);
        }
    }
}
