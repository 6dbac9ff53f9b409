<?php

declare(strict_types=1);

namespace Queuety\Middleware;

use Queuety\Config;
use Queuety\Contracts\Middleware;
use Queuety\Exceptions\RateLimitExceededException;
use Queuety\Queuety;

/**
 * Fails a run of the job class once $max runs completed within $window
 * seconds. The count is the plugin's: the class's `completed` log rows in
 * the window (which every worker, PHP or the daemon, writes), so no row of
 * its own.
 */
class RateLimited implements Middleware
{
    public function __construct(
        private readonly int $max,
        private readonly int $window,
    ) {
    }

    public function handle(object $job, \Closure $next): void
    {
        $handler = get_class($job);
        $conn = Queuety::connection();
        $stmt = $conn->pdo()->prepare('SELECT COUNT(*) FROM ' . $conn->table(Config::table_logs()) . " WHERE handler = :handler AND event = 'completed' AND created_at >= :since");
        $stmt->execute(['handler' => $handler, 'since' => gmdate('Y-m-d H:i:s', time() - $this->window)]);
        if ((int) $stmt->fetchColumn() >= $this->max) {
            throw new RateLimitExceededException($handler, $this->max, $this->window);
        }
        $next($job);
    }
}
