<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\BackoffStrategy;
use Queuety\Enums\Priority;

/**
 * The job options of one workflow step job, resolved the way the plugin
 * resolves them: the step definition's own keys (flat, or grouped under
 * config / retry / resources), then the handler class's metadata, then
 * the workflow's defaults. Per-attempt settings the jobs table has no
 * column for (max_attempts as configured, backoff, rate_limit, timeout)
 * travel in the payload under __queuety_runtime, which the daemon reads.
 *
 * Builder steps carry none of the option keys, so for them this reduces
 * to metadata-then-workflow defaults; the full rules are kept so that
 * serialized definitions resolve alike too.
 */
final class StepDispatchOptions
{
    public const RUNTIME_PAYLOAD_KEY = '__queuety_runtime';

    /**
     * $worker_session is the job's raw worker_session object (null: not
     * session-bound; placeholders never are). Its queue routes the job
     * after the definition's own queue and before the handler's and the
     * workflow's (durable-workflow's RoutingResolver order); it is
     * validated here, so a malformed one never reaches the jobs table.
     *
     * @param array<mixed>|string $definition
     * @param array<mixed>        $payload
     * @return array{queue: string, priority: Priority, delay: int, max_attempts: int, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int, payload: array<mixed>, session_id: string|null, worker_session: array<string, mixed>|null}
     * @throws \InvalidArgumentException For a malformed worker_session.
     */
    public static function resolve(
        array|string $definition,
        string $handler,
        string $workflow_queue,
        Priority $workflow_priority,
        int $workflow_attempts,
        array $payload = [],
        int $default_cost_units = 1,
        mixed $worker_session = null,
    ): array {
        $session = $worker_session === null ? null : WorkerSessionOptions::fromSnapshot($worker_session);
        $data = is_array($definition) ? $definition : [];
        $config = self::group($data, 'config');
        $retry = array_replace(self::group($config, 'retry'), self::group($data, 'retry'));
        $resources = array_replace(self::group($config, 'resources'), self::group($data, 'resources'));
        $meta = HandlerMetadata::from_class($handler);

        $queue = self::string_value($data['queue'] ?? $config['queue'] ?? null) ?? $session?->queue ?? $meta['queue'] ?? $workflow_queue;
        $priority = self::priority_value($data['priority'] ?? $config['priority'] ?? null) ?? $workflow_priority;
        $max_attempts = self::positive_int($data['max_attempts'] ?? $retry['max_attempts'] ?? null) ?? $meta['max_attempts'] ?? $workflow_attempts;
        $backoff = self::backoff_value($data['backoff'] ?? $retry['backoff'] ?? null) ?? $meta['backoff'];
        $rate_limit = self::rate_limit_value($data['rate_limit'] ?? $resources['rate_limit'] ?? null) ?? $meta['rate_limit'];
        $group = self::string_value($data['concurrency_group'] ?? $resources['concurrency_group'] ?? null) ?? $meta['concurrency_group'];
        $limit = self::positive_int($data['concurrency_limit'] ?? $resources['concurrency_limit'] ?? null) ?? $meta['concurrency_limit'];
        $cost = self::non_negative_int($data['cost_units'] ?? $resources['cost_units'] ?? null) ?? $meta['cost_units'] ?? $default_cost_units;
        $timeout = self::duration_seconds($data['timeout_seconds'] ?? $data['timeout'] ?? $config['timeout'] ?? null);
        $delay = self::duration_seconds($data['job_delay_seconds'] ?? $data['job_delay'] ?? $data['delay'] ?? $config['delay'] ?? null);

        if ($group === null) {
            $limit = null;
        }

        // The runtime block keeps max_attempts as configured (0 stays 0),
        // while the column gets at least 1: both as the plugin writes them.
        $runtime = ['max_attempts' => $max_attempts];
        if ($backoff !== null) {
            $runtime['backoff'] = $backoff;
        }
        if ($rate_limit !== null) {
            $runtime['rate_limit'] = $rate_limit;
        }
        if ($timeout > 0) {
            $runtime['timeout_seconds'] = $timeout;
        }
        $payload[self::RUNTIME_PAYLOAD_KEY] = $runtime;

        return [
            'queue' => $queue,
            'priority' => $priority,
            'delay' => $delay,
            'max_attempts' => max(1, $max_attempts),
            'concurrency_group' => $group,
            'concurrency_limit' => $limit,
            'cost_units' => max(0, $cost),
            'payload' => $payload,
            'session_id' => $session?->sessionId,
            'worker_session' => $session?->toNormalizedSnapshot($queue),
        ];
    }

    /**
     * The branches of a parallel step: `branches` when present, else the
     * builder's `handlers` (trimmed, blanks dropped).
     *
     * @param array<mixed> $step_def
     * @return list<array<string, mixed>>
     */
    public static function parallel_branches(array $step_def): array
    {
        $branches = $step_def['branches'] ?? null;
        $source = is_array($branches) ? $branches : (is_array($step_def['handlers'] ?? null) ? $step_def['handlers'] : []);
        $out = [];
        foreach ($source as $branch) {
            $normalized = is_array($branches) ? self::normalize_branch($branch) : self::handler_branch($branch);
            if ($normalized !== null) {
                $out[] = $normalized;
            }
        }
        return $out;
    }

    /**
     * A branch's options over its step's (config, retry, resources and
     * payload merged one level deep).
     *
     * @param array<mixed>         $step_def
     * @param array<string, mixed> $branch
     * @return array<mixed>
     */
    public static function merge_parallel_branch(array $step_def, array $branch): array
    {
        $parent = $step_def;
        unset($parent['branches'], $parent['handlers'], $parent['type']);
        $merged = array_replace($parent, $branch);
        foreach (['config', 'retry', 'resources', 'payload'] as $key) {
            $a = is_array($parent[$key] ?? null) ? $parent[$key] : null;
            $b = is_array($branch[$key] ?? null) ? $branch[$key] : null;
            if ($a !== null || $b !== null) {
                $merged[$key] = array_replace($a ?? [], $b ?? []);
            }
        }
        return $merged;
    }

    /**
     * @param array<mixed> $branch
     */
    public static function branch_handler(array $branch): string
    {
        return self::string_value($branch['class'] ?? $branch['handler'] ?? null) ?? '';
    }

    /**
     * The job payload a single step or branch definition gives.
     *
     * @param array<mixed>|string $definition
     * @return array<string, mixed>
     */
    public static function payload(array|string $definition): array
    {
        return is_array($definition) ? self::as_array($definition['payload'] ?? null) : [];
    }

    /**
     * @return array<string, mixed>|null
     */
    private static function handler_branch(mixed $handler): ?array
    {
        return is_string($handler) && trim($handler) !== '' ? ['class' => trim($handler)] : null;
    }

    /**
     * @return array<string, mixed>|null
     */
    private static function normalize_branch(mixed $branch): ?array
    {
        if (is_string($branch)) {
            return self::handler_branch($branch);
        }
        if (!is_array($branch)) {
            return null;
        }
        $normalized = array_filter($branch, 'is_string', ARRAY_FILTER_USE_KEY);
        $handler = self::branch_handler($normalized);
        if ($handler === '') {
            return null;
        }
        $normalized['class'] = $handler;
        return $normalized;
    }

    /**
     * @param array<mixed> $data
     * @return array<string, mixed>
     */
    private static function group(array $data, string $key): array
    {
        return self::as_array($data[$key] ?? null);
    }

    /**
     * @return array<string, mixed>
     */
    private static function as_array(mixed $value): array
    {
        if (!is_array($value)) {
            return [];
        }
        $out = [];
        foreach ($value as $key => $item) {
            $out[(string) $key] = $item;
        }
        return $out;
    }

    private static function string_value(mixed $value): ?string
    {
        return is_string($value) && trim($value) !== '' ? trim($value) : null;
    }

    /**
     * Real integers only: a numeric string in a definition is ignored.
     */
    private static function positive_int(mixed $value): ?int
    {
        return is_int($value) && $value > 0 ? $value : null;
    }

    private static function non_negative_int(mixed $value): ?int
    {
        return is_int($value) && $value >= 0 ? $value : null;
    }

    private static function priority_value(mixed $value): ?Priority
    {
        if (is_int($value)) {
            return Priority::tryFrom($value);
        }
        if (!is_string($value)) {
            return null;
        }
        return match (trim($value)) {
            'low' => Priority::Low,
            'normal' => Priority::Normal,
            'high' => Priority::High,
            'urgent' => Priority::Urgent,
            default => null,
        };
    }

    /**
     * @return string|list<int>|null
     */
    private static function backoff_value(mixed $value): string|array|null
    {
        if (is_string($value) && BackoffStrategy::tryFrom($value) !== null) {
            return $value;
        }
        if (!is_array($value)) {
            return null;
        }
        $delays = [];
        foreach ($value as $delay) {
            if (is_int($delay)) {
                $delays[] = max(0, $delay);
            }
        }
        return $delays === [] ? null : $delays;
    }

    /**
     * @return array{int, int}|null
     */
    private static function rate_limit_value(mixed $value): ?array
    {
        if (!is_array($value)) {
            return null;
        }
        $max = $value['max'] ?? $value['max_executions'] ?? $value[0] ?? null;
        $window = $value['window'] ?? $value['window_seconds'] ?? $value[1] ?? null;
        if (!is_int($max) || !is_int($window) || $max < 1 || $window < 1) {
            return null;
        }
        return [$max, $window];
    }

    /**
     * An int of seconds or {seconds, minutes, hours, days}; never negative.
     */
    private static function duration_seconds(mixed $duration): int
    {
        if (is_int($duration)) {
            return max(0, $duration);
        }
        if (!is_array($duration)) {
            return 0;
        }
        $part = static fn (string $key): int => is_scalar($duration[$key] ?? 0) ? (int) ($duration[$key] ?? 0) : 0;
        return max(0, $part('seconds') + $part('minutes') * 60 + $part('hours') * 3600 + $part('days') * 86400);
    }
}
