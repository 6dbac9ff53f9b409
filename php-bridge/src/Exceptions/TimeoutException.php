<?php

declare(strict_types=1);

namespace Queuety\Exceptions;

/**
 * A job ran past its time limit ($timeout, the Timeout middleware).
 */
class TimeoutException extends \RuntimeException
{
    public function __construct(int $seconds, ?\Throwable $previous = null)
    {
        parent::__construct("Job exceeded maximum execution time of {$seconds} seconds.", 0, $previous);
    }
}
