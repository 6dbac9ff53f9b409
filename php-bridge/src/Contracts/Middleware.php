<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * Wraps a Contracts\Job's handle(): call $next($job) to run it.
 */
interface Middleware
{
    public function handle(object $job, \Closure $next): void;
}
