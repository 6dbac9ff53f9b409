<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * A self-contained job class (the plugin's Contracts\Job): its public
 * properties are the payload, handle() does the work. Optional members the
 * worker reads: middleware(): Middleware[], failed(\Throwable), and the
 * public properties $tries, $timeout, $backoff (class defaults).
 */
interface Job
{
    public function handle(): void;
}
