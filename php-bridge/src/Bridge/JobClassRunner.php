<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * Runs a Contracts\Job row as the plugin's worker does: the instance built
 * from the payload, its middleware() around handle(), $timeout as an alarm,
 * and on the last attempt its failed($e) hook before the failure is
 * reported. $tries and $backoff (class defaults) are the attempt's
 * settings: settings() returns them for the result frame, so the daemon
 * retries and buries by them, as the plugin's worker does, rather than by
 * the row's max_attempts (a chain writes 3 whatever $tries says).
 *
 * One fix over the plugin: a middleware that returns without calling
 * $next (WithoutOverlapping or UniqueJob finding their lock held) leaves
 * the plugin's job `processing` until stale recovery; here the job
 * completes without running, the "silently skipped" the plugin's docs
 * describe.
 */
final class JobClassRunner
{
    /** @var array{tries: ?int, timeout: ?int, max_exceptions: ?int, backoff: ?array<mixed>, concurrency_group: ?string, concurrency_limit: ?int, cost_units: ?int} */
    private readonly array $meta;

    public function __construct(private readonly string $class, private readonly JobContext $job)
    {
        $this->meta = JobClasses::metadata($class);
    }

    /**
     * The attempt's settings the class declares: max_attempts ($tries) and
     * backoff (seconds before the next attempt, from the $backoff list by
     * attempt), each only when declared.
     *
     * @return array{max_attempts?: int, backoff?: int}
     */
    public function settings(): array
    {
        $settings = [];
        if ($this->meta['tries'] !== null) {
            $settings['max_attempts'] = $this->meta['tries'];
        }
        $backoff = $this->meta['backoff'] ?? [];
        if ($backoff !== []) {
            $list = array_values($backoff);
            $pick = $list[max(0, min($this->job->attempt - 1, count($list) - 1))];
            $settings['backoff'] = is_scalar($pick) ? max(0, (int) $pick) : 0;
        }
        return $settings;
    }

    /**
     * @param array<mixed> $payload The row's payload without reserved keys.
     * @throws \Throwable What the job (or its middleware) threw; failed() has
     *                    run first when this was its last attempt.
     */
    public function run(array $payload): void
    {
        $instance = null;
        $alarm = $this->meta['timeout'] !== null && $this->meta['timeout'] > 0
            && function_exists('pcntl_alarm') && function_exists('pcntl_signal');
        try {
            if ($alarm) {
                $seconds = (int) $this->meta['timeout'];
                pcntl_async_signals(true);
                pcntl_signal(SIGALRM, static function () use ($seconds): void {
                    throw self::timeout($seconds);
                });
                pcntl_alarm($seconds);
            }
            $instance = JobClasses::deserialize($this->class, $payload);
            $ran = false;
            $core = static function (object $job) use (&$ran): void {
                $ran = true;
                $job->handle();
            };
            self::pipeline(self::middleware_of($instance), $core)($instance);
            if (!$ran) {
                fwrite(STDERR, "queuety-php-worker: job {$this->job->id} ({$this->class}): a middleware did not run it (lock held); completed without running, as documented\n");
            }
        } catch (\Throwable $e) {
            if ($this->job->attempt >= ($this->meta['tries'] ?? $this->job->max_attempts)) {
                $this->call_failed($instance, $payload, $e);
            }
            throw $e;
        } finally {
            if ($alarm) {
                pcntl_alarm(0);
                pcntl_signal(SIGALRM, SIG_DFL);
            }
        }
    }

    /**
     * @return list<object> The entries of middleware() that are Contracts\Middleware.
     */
    private static function middleware_of(object $instance): array
    {
        if (!method_exists($instance, 'middleware')) {
            return [];
        }
        $declared = $instance->middleware();
        $out = [];
        foreach (is_array($declared) ? $declared : [] as $entry) {
            if (is_a($entry, 'Queuety\\Contracts\\Middleware')) {
                $out[] = $entry;
            }
        }
        return $out;
    }

    /**
     * The first middleware outermost, the job's handle() innermost.
     *
     * @param list<object> $middleware
     */
    private static function pipeline(array $middleware, \Closure $core): \Closure
    {
        $next = $core;
        foreach (array_reverse($middleware) as $mw) {
            $inner = $next;
            $next = static function (object $job) use ($mw, $inner): void {
                $mw->handle($job, $inner);
            };
        }
        return $next;
    }

    /**
     * The plugin's call_failed_hook: on the instance, or one built anew if
     * building it was what failed (no hook when that fails again); the
     * hook's own errors are ignored.
     *
     * @param array<mixed> $payload
     */
    private function call_failed(?object $instance, array $payload, \Throwable $e): void
    {
        try {
            $instance ??= JobClasses::deserialize($this->class, $payload);
            if (method_exists($instance, 'failed')) {
                $instance->failed($e);
            }
        } catch (\Throwable) {
        }
    }

    private static function timeout(int $seconds): \Throwable
    {
        $class = 'Queuety\\Exceptions\\TimeoutException';
        return class_exists($class)
            ? new $class($seconds)
            : new \RuntimeException("Job exceeded maximum execution time of {$seconds} seconds.");
    }
}
