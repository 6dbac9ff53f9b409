<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety::on_action(): start a workflow when a WordPress action fires.
 * It needs WordPress's add_action(), as the plugin's does; without
 * WordPress it throws the plugin's RuntimeException.
 *
 * @internal
 */
final class ActionWorkflowBridge
{
    /**
     * @throws \InvalidArgumentException For a blank hook or workflow name, or negative accepted_args.
     * @throws \RuntimeException Without WordPress's add_action().
     */
    public static function register(
        string $hook,
        string|WorkflowBuilder $workflow,
        ?callable $map = null,
        ?callable $when = null,
        callable|string|null $idempotency_key = null,
        int $priority = 10,
        ?int $accepted_args = null,
    ): void {
        $hook = trim($hook);
        if ($hook === '') {
            throw new \InvalidArgumentException('Action hook name cannot be empty.');
        }
        if (is_string($workflow) && trim($workflow) === '') {
            throw new \InvalidArgumentException('Action workflow name cannot be empty.');
        }
        if (!function_exists('add_action')) {
            throw new \RuntimeException('Queuety::on_action() requires WordPress add_action().');
        }
        if ($accepted_args !== null && $accepted_args < 0) {
            throw new \InvalidArgumentException('accepted_args must be at least 0.');
        }
        if ($accepted_args === null) {
            // As many arguments as the widest callback takes (a variadic one: all).
            $accepted_args = 1;
            foreach ([$map, $when, is_callable($idempotency_key) ? $idempotency_key : null] as $callable) {
                if ($callable !== null) {
                    $r = new \ReflectionFunction(\Closure::fromCallable($callable));
                    $accepted_args = max($accepted_args, $r->isVariadic() ? 99 : $r->getNumberOfParameters());
                }
            }
        }
        \call_user_func('add_action', $hook, static function (mixed ...$args) use ($hook, $workflow, $map, $when, $idempotency_key): void {
            self::dispatch_action($hook, $workflow, array_values($args), $map, $when, $idempotency_key);
        }, $priority, $accepted_args);
    }

    /**
     * @param list<mixed> $args
     */
    public static function dispatch_action(string $hook, string|WorkflowBuilder $workflow, array $args, ?callable $map, ?callable $when, callable|string|null $idempotency_key): void
    {
        if ($when !== null && !(bool) $when(...$args)) {
            return;
        }
        $payload = $map !== null ? $map(...$args) : ['trigger_hook' => $hook, 'hook_args' => $args];
        if (!is_array($payload)) {
            throw new \UnexpectedValueException('Action workflow map() must return an array payload.');
        }
        $payload = self::normalize($payload);
        $key = is_callable($idempotency_key) ? $idempotency_key(...$args) : $idempotency_key;
        if ($key !== null) {
            if (!is_string($key)) {
                throw new \UnexpectedValueException('Action workflow idempotency_key must resolve to a string or null.');
            }
            $key = trim($key);
            if ($key === '') {
                throw new \InvalidArgumentException('Action workflow idempotency_key cannot be empty.');
            }
        }
        if ($workflow instanceof WorkflowBuilder) {
            $builder = clone $workflow;
            if ($key !== null) {
                $builder->idempotency_key($key);
            }
            $builder->dispatch($payload);
            return;
        }
        Queuety::run_workflow($workflow, $payload, $key === null ? [] : ['idempotency_key' => $key]);
    }

    /**
     * @param array<mixed> $payload
     * @return array<string, mixed>
     */
    private static function normalize(array $payload): array
    {
        $out = [];
        foreach ($payload as $key => $value) {
            if (is_string($key) && str_starts_with($key, '_')) {
                throw new \InvalidArgumentException('Action workflow payload keys cannot start with "_".');
            }
            $out[(string) $key] = self::normalize_value($value);
        }
        return $out;
    }

    private static function normalize_value(mixed $value): mixed
    {
        return match (true) {
            $value === null, is_scalar($value) => $value,
            is_array($value) => self::normalize($value),
            $value instanceof \JsonSerializable => self::normalize_value($value->jsonSerialize()),
            $value instanceof \Stringable => (string) $value,
            default => throw new \InvalidArgumentException('Action workflow payloads must only contain arrays, scalars, null, JsonSerializable, or Stringable values. Normalize WordPress objects inside map().'),
        };
    }
}
