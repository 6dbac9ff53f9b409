<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\JobClasses;
use Queuety\Contracts\Job;

/**
 * A Contracts\Job to and from its row, as the plugin stores it (see
 * Bridge\JobClasses).
 */
class JobSerializer
{
    /**
     * @return array{handler: class-string, payload: array<string, mixed>}
     */
    public static function serialize(Job $job): array
    {
        return JobClasses::serialize($job);
    }

    /**
     * @param array<mixed> $payload
     */
    public static function deserialize(string $handler_class, array $payload): Job
    {
        $job = JobClasses::deserialize($handler_class, $payload);
        assert($job instanceof Job);
        return $job;
    }
}
