<?php

declare(strict_types=1);

namespace Queuety;

/**
 * For Contracts\Job classes: SendInvoice::dispatch($id) builds the job
 * from the constructor arguments and dispatches it, as the plugin's trait.
 */
trait Dispatchable
{
    public static function dispatch(mixed ...$args): PendingJob
    {
        return Queuety::dispatch(new static(...$args));
    }

    public static function dispatch_if(bool $condition, mixed ...$args): ?PendingJob
    {
        return $condition ? static::dispatch(...$args) : null;
    }

    public static function dispatch_unless(bool $condition, mixed ...$args): ?PendingJob
    {
        return $condition ? null : static::dispatch(...$args);
    }

    /**
     * @param list<mixed> $jobs
     */
    public static function with_chain(array $jobs): ChainBuilder
    {
        return Queuety::chain($jobs);
    }
}
