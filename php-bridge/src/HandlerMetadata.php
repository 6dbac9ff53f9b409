<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Attributes\QueuetyHandler;
use Queuety\Attributes\QueuetyStep;
use Queuety\Contracts\ForEachHandler;
use Queuety\Contracts\StateAction;
use Queuety\Contracts\StreamingStep;

/**
 * Dispatch defaults a handler class declares, read as the plugin reads
 * them: #[QueuetyHandler] (queue, max_attempts) or #[QueuetyStep]
 * (max_attempts), then a no-argument config() that may override queue,
 * max_attempts, backoff, rate_limit, concurrency_group/limit and
 * cost_units. They matter because they change the row (a workflow step
 * job carries backoff and rate_limit in its payload's __queuety_runtime):
 * the same dispatch code must write the same row on either runtime.
 */
final class HandlerMetadata
{
    /**
     * @return array{queue: string|null, max_attempts: int|null, backoff: string|array<string, mixed>|null, rate_limit: array{int, int}|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null}
     */
    public static function from_class(string $class): array
    {
        $defaults = ['queue' => null, 'max_attempts' => null, 'backoff' => null, 'rate_limit' => null,
            'concurrency_group' => null, 'concurrency_limit' => null, 'cost_units' => null];
        if (!class_exists($class)) {
            return $defaults;
        }
        $reflection = new \ReflectionClass($class);
        if ($reflection->isAbstract() || $reflection->isInterface()) {
            return $defaults;
        }
        $handler = $reflection->getAttributes(QueuetyHandler::class);
        if ($handler !== []) {
            $attr = $handler[0]->newInstance();
            $defaults['queue'] = $attr->queue;
            $defaults['max_attempts'] = $attr->max_attempts;
        }
        $step = $reflection->getAttributes(QueuetyStep::class);
        if ($step !== [] && $defaults['max_attempts'] === null) {
            $defaults['max_attempts'] = $step[0]->newInstance()->max_attempts;
        }
        $config = self::config_of($reflection);
        return $config === null ? $defaults : self::apply_config($defaults, $config);
    }

    /**
     * config() of a Handler, Step, ForEachHandler, StreamingStep or
     * StateAction that can be built without arguments; null when there is
     * none or it throws.
     *
     * @return array<mixed>|null
     */
    private static function config_of(\ReflectionClass $reflection): ?array
    {
        $configurable = false;
        foreach ([Handler::class, Step::class, ForEachHandler::class, StreamingStep::class, StateAction::class] as $interface) {
            $configurable = $configurable || $reflection->implementsInterface($interface);
        }
        if (!$configurable) {
            return null;
        }
        $constructor = $reflection->getConstructor();
        if ($constructor !== null && $constructor->getNumberOfRequiredParameters() > 0) {
            return null;
        }
        try {
            $instance = $reflection->newInstance();
            if (!method_exists($instance, 'config')) {
                return null;
            }
            $config = $instance->config();
        } catch (\Throwable) {
            return null;
        }
        return is_array($config) ? $config : null;
    }

    /**
     * @param array{queue: string|null, max_attempts: int|null, backoff: string|array<string, mixed>|null, rate_limit: array{int, int}|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null} $defaults
     * @param array<mixed> $config
     * @return array{queue: string|null, max_attempts: int|null, backoff: string|array<string, mixed>|null, rate_limit: array{int, int}|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null}
     */
    private static function apply_config(array $defaults, array $config): array
    {
        $queue = $config['queue'] ?? null;
        if (is_string($queue) && trim($queue) !== '') {
            $defaults['queue'] = trim($queue);
        }
        $max = $config['max_attempts'] ?? null;
        if (is_scalar($max)) {
            $defaults['max_attempts'] = max(1, (int) $max);
        }
        $backoff = $config['backoff'] ?? null;
        if (is_string($backoff)) {
            $defaults['backoff'] = $backoff;
        } elseif (is_array($backoff) && $backoff !== [] && array_is_list($backoff)) {
            // A list of delays ([5, 30], the form the for_each docs show)
            // is kept as a definition's backoff is: integers, negatives as
            // 0. The plugin keeps string keys only and so writes [], and its
            // worker then retries at once after an "Undefined array key 0"
            // warning; a PHP worker reading our list waits as asked.
            $defaults['backoff'] = array_values(array_map(
                static fn (int $d): int => max(0, $d),
                array_filter($backoff, 'is_int'),
            ));
        } elseif (is_array($backoff)) {
            $defaults['backoff'] = array_filter($backoff, 'is_string', ARRAY_FILTER_USE_KEY);
        }
        $rate = $config['rate_limit'] ?? null;
        if (is_array($rate) && count($rate) >= 2) {
            $values = array_values($rate);
            $defaults['rate_limit'] = [is_scalar($values[0]) ? (int) $values[0] : 0, is_scalar($values[1]) ? (int) $values[1] : 0];
        }
        $group = $config['concurrency_group'] ?? null;
        if (is_string($group) && trim($group) !== '') {
            $defaults['concurrency_group'] = trim($group);
        }
        $limit = $config['concurrency_limit'] ?? null;
        if (is_scalar($limit) && (int) $limit > 0) {
            $defaults['concurrency_limit'] = (int) $limit;
        }
        $cost = $config['cost_units'] ?? null;
        if (is_scalar($cost) && (int) $cost > 0) {
            $defaults['cost_units'] = (int) $cost;
        }
        if ($defaults['concurrency_group'] === null) {
            $defaults['concurrency_limit'] = null;
        }
        return $defaults;
    }
}
