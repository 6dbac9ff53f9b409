<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Attributes\QueuetyHandler;
use Queuety\Attributes\QueuetyStep;

/**
 * Dispatch defaults a handler class declares, read as the plugin reads
 * them: #[QueuetyHandler] (queue, max_attempts) or #[QueuetyStep]
 * (max_attempts), then a no-argument config() that may override queue,
 * max_attempts, concurrency_group/limit and cost_units. They matter
 * because they change the row: the same dispatch code must write the same
 * row on either runtime.
 */
final class HandlerMetadata
{
    /**
     * @return array{queue: string|null, max_attempts: int|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null}
     */
    public static function from_class(string $class): array
    {
        $defaults = ['queue' => null, 'max_attempts' => null, 'concurrency_group' => null, 'concurrency_limit' => null, 'cost_units' => null];
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
     * config() of a Handler or Step that can be built without arguments;
     * null when there is none or it throws.
     *
     * @return array<mixed>|null
     */
    private static function config_of(\ReflectionClass $reflection): ?array
    {
        if (!$reflection->implementsInterface(Handler::class) && !$reflection->implementsInterface(Step::class)) {
            return null;
        }
        $constructor = $reflection->getConstructor();
        if ($constructor !== null && $constructor->getNumberOfRequiredParameters() > 0) {
            return null;
        }
        try {
            $config = $reflection->newInstance()->config();
        } catch (\Throwable) {
            return null;
        }
        return is_array($config) ? $config : null;
    }

    /**
     * @param array{queue: string|null, max_attempts: int|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null} $defaults
     * @param array<mixed> $config
     * @return array{queue: string|null, max_attempts: int|null, concurrency_group: string|null, concurrency_limit: int|null, cost_units: int|null}
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
