<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety's classic job handler, unchanged: a class written for the plugin
 * runs on the bridge's worker as is.
 */
interface Handler
{
    /**
     * Run the job. Throw to fail the attempt (retried, then buried).
     *
     * @param array<string, mixed> $payload The payload without Queuety's reserved keys.
     */
    public function handle(array $payload): void;

    /**
     * Defaults applied when the job is dispatched: queue, max_attempts,
     * concurrency_group, concurrency_limit, cost_units (backoff and
     * rate_limit are not stored, as with the plugin).
     *
     * @return array<string, mixed>
     */
    public function config(): array;
}
