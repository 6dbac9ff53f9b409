<?php

declare(strict_types=1);

namespace Queuety\Exceptions;

/**
 * The RateLimited middleware refused a run.
 */
class RateLimitExceededException extends \RuntimeException
{
    public function __construct(string $handler, int $max, int $window, ?\Throwable $previous = null)
    {
        parent::__construct("Rate limit exceeded for '{$handler}': max {$max} executions per {$window} seconds.", 0, $previous);
    }
}
