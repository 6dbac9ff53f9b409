<?php

declare(strict_types=1);

namespace Queuety\Middleware;

use Queuety\Contracts\Middleware;
use Queuety\Exceptions\TimeoutException;

/**
 * Fails the job with TimeoutException after $seconds (SIGALRM, where
 * pcntl is available, as in the plugin). The daemon's own time limit for
 * the attempt still applies.
 */
class Timeout implements Middleware
{
    public function __construct(private readonly int $seconds)
    {
    }

    public function handle(object $job, \Closure $next): void
    {
        $alarm = function_exists('pcntl_alarm') && function_exists('pcntl_signal');
        if ($alarm) {
            $seconds = $this->seconds;
            pcntl_async_signals(true);
            pcntl_signal(SIGALRM, static function () use ($seconds): void {
                throw new TimeoutException($seconds);
            });
            pcntl_alarm($this->seconds);
        }
        try {
            $next($job);
        } finally {
            if ($alarm) {
                pcntl_alarm(0);
                pcntl_signal(SIGALRM, SIG_DFL);
            }
        }
    }
}
