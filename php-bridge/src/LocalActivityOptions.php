<?php

declare(strict_types=1);

namespace Queuety;

use InvalidArgumentException;

/**
 * durable-workflow's LocalActivityOptions (seed 002): the retry and timeout
 * options of a local activity, the step the worker that advanced the
 * workflow runs at once in its own process, without the queue.
 *
 *     Queuety::workflow('order')
 *         ->then(PlaceOrder::class)
 *         ->local_activity(SendReceiptActivity::class, new LocalActivityOptions(
 *             maxAttempts: 3,
 *             startToCloseTimeout: 10,
 *             scheduleToCloseTimeout: 30,
 *             heartbeatTimeout: 5,
 *         ));
 *
 * Times are whole seconds; null leaves an option unset (max attempts then
 * come from the handler, else 1; backoff defaults to durable-workflow's
 * [1, 2, 5, 10, 15, 30, 60, 120]). Routing options (connection, queue,
 * worker session, schedule-to-start) do not exist for a local activity:
 * fromArray() rejects them with the library's message. The Go builder
 * (workflow.LocalActivityOptions) validates and serializes identically.
 */
final class LocalActivityOptions
{
    public const ROUTING_MESSAGE = 'Local activities do not accept connection, queue, worker session, or schedule-to-start routing options.';

    /** The most attempts a local activity may have (see docs/compat.md). */
    public const MAX_ATTEMPTS = 100;

    /** @var int|list<int>|null */
    public readonly int|array|null $backoff;
    /** @var list<string> */
    public readonly array $nonRetryableErrorTypes;

    /**
     * @param int|list<int>|null $backoff Seconds before each retry (the last repeats).
     * @param list<string> $nonRetryableErrorTypes Exception classes (or short names) that fail at once.
     */
    public function __construct(
        public readonly ?int $maxAttempts = null,
        int|array|null $backoff = null,
        public readonly ?int $startToCloseTimeout = null,
        public readonly ?int $scheduleToCloseTimeout = null,
        public readonly ?int $heartbeatTimeout = null,
        array $nonRetryableErrorTypes = [],
    ) {
        if ($maxAttempts !== null && ($maxAttempts < 1 || $maxAttempts > self::MAX_ATTEMPTS)) {
            throw new InvalidArgumentException(sprintf('local activity max_attempts must be between 1 and %d, got %d', self::MAX_ATTEMPTS, $maxAttempts));
        }
        foreach (['start_to_close_timeout' => $startToCloseTimeout, 'schedule_to_close_timeout' => $scheduleToCloseTimeout, 'heartbeat_timeout' => $heartbeatTimeout] as $key => $value) {
            if ($value !== null && $value < 1) {
                throw new InvalidArgumentException(sprintf('local activity %s must be a positive number of seconds, got %d', $key, $value));
            }
        }
        if (is_int($backoff) && $backoff < 0) {
            throw new InvalidArgumentException(sprintf('local activity backoff entry 0 must not be negative, got %d', $backoff));
        }
        if (is_array($backoff)) {
            $backoff = array_values($backoff);
            foreach ($backoff as $i => $b) {
                if (!is_int($b) || $b < 0) {
                    throw new InvalidArgumentException(sprintf('local activity backoff entry %d must not be negative, got %s', $i, var_export($b, true)));
                }
            }
        }
        $this->backoff = $backoff;
        $seen = [];
        foreach (array_values($nonRetryableErrorTypes) as $i => $type) {
            if (!is_string($type) || trim($type) === '') {
                throw new InvalidArgumentException(sprintf('local activity non_retryable_error_types entry %d must be a non-empty string', $i));
            }
            if (isset($seen[$type])) {
                throw new InvalidArgumentException(sprintf('local activity non_retryable_error_types lists "%s" twice', $type));
            }
            $seen[$type] = true;
        }
        $this->nonRetryableErrorTypes = array_values($nonRetryableErrorTypes);
    }

    /**
     * Builds options from an ActivityOptions-style array (camelCase or
     * snake_case keys). Routing options are refused, as durable-workflow
     * refuses an ActivityOptions with them.
     *
     * @param array<string, mixed> $options
     */
    public static function fromArray(array $options): self
    {
        foreach (['connection', 'queue', 'workerSession', 'worker_session', 'scheduleToStartTimeout', 'schedule_to_start_timeout'] as $key) {
            if (array_key_exists($key, $options) && $options[$key] !== null) {
                throw new InvalidArgumentException(self::ROUTING_MESSAGE);
            }
        }
        $get = static fn (string $camel, string $snake) => $options[$camel] ?? $options[$snake] ?? null;
        return new self(
            maxAttempts: $get('maxAttempts', 'max_attempts'),
            backoff: $get('backoff', 'backoff'),
            startToCloseTimeout: $get('startToCloseTimeout', 'start_to_close_timeout'),
            scheduleToCloseTimeout: $get('scheduleToCloseTimeout', 'schedule_to_close_timeout'),
            heartbeatTimeout: $get('heartbeatTimeout', 'heartbeat_timeout'),
            nonRetryableErrorTypes: $get('nonRetryableErrorTypes', 'non_retryable_error_types') ?? [],
        );
    }

    /**
     * The options snapshot stored in the step (and in
     * activity_executions.activity_options): the markers, then every
     * option, null when unset; never a routing key.
     *
     * @return array<string, mixed>
     */
    public function snapshot(): array
    {
        $backoff = $this->backoff;
        if (is_int($backoff)) {
            $backoff = [$backoff];
        }
        return [
            'execution_mode' => 'local',
            'queue_bypassed' => true,
            'routing' => 'same_process_workflow_task',
            'max_attempts' => $this->maxAttempts,
            'backoff' => $backoff,
            'start_to_close_timeout' => $this->startToCloseTimeout,
            'schedule_to_close_timeout' => $this->scheduleToCloseTimeout,
            'heartbeat_timeout' => $this->heartbeatTimeout,
            'non_retryable_error_types' => $this->nonRetryableErrorTypes,
        ];
    }
}
