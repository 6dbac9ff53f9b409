<?php
/**
 * The job_middleware_locks recording's Contracts\Job classes, for
 * TestReplayJobMiddlewareLocks; the facade uses the test database named in
 * QUEUETY_TEST_DB_* (the middleware writes the locks table).
 */

declare(strict_types=1);

use Queuety\Contracts\Job;
use Queuety\Dispatchable;
use Queuety\Middleware\ThrottlesExceptions;
use Queuety\Middleware\WithoutOverlapping;

Queuety\Queuety::init(new Queuety\Connection(
    (string) getenv('QUEUETY_TEST_DB_ADDR'),
    (string) getenv('QUEUETY_TEST_DB_NAME'),
    (string) getenv('QUEUETY_TEST_DB_USER'),
    (string) getenv('QUEUETY_TEST_DB_PASSWORD'),
));

final class OverlapJob implements Job
{
    use Dispatchable;

    public function __construct(public int $n)
    {
    }

    public function middleware(): array
    {
        return [new WithoutOverlapping('nightly-report', 120)];
    }

    public function handle(): void
    {
    }
}

final class ThrottledJob implements Job
{
    use Dispatchable;

    public function __construct(public int $n)
    {
    }

    public function middleware(): array
    {
        return [new ThrottlesExceptions(max_attempts: 1, decay_minutes: 10)];
    }

    public function handle(): void
    {
        throw new RuntimeException("upstream down ({$this->n})");
    }
}
