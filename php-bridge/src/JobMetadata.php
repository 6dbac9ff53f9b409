<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\JobClasses;

/**
 * A Contracts\Job class's settings from its public properties' default
 * values, as the plugin reads them (see Bridge\JobClasses::metadata).
 */
class JobMetadata
{
    /**
     * @return array{tries: ?int, timeout: ?int, max_exceptions: ?int, backoff: ?array<mixed>, concurrency_group: ?string, concurrency_limit: ?int, cost_units: ?int}
     */
    public static function from_class(string $class): array
    {
        return JobClasses::metadata($class);
    }
}
