<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\Contracts\Compensation;
use Queuety\Contracts\ForEachHandler;
use Queuety\Contracts\ForEachReducer;
use Queuety\Contracts\RepeatCondition;
use Queuety\Handler;
use Queuety\Step;

/**
 * The worker's handler names. An application's bootstrap registers what
 * has no class of its own:
 *
 *     Handlers::register('send_email', fn (array $payload) => mail(...));
 *     Handlers::register('report', App\Jobs\Report::class);
 *
 * A name not registered is tried as a class implementing Queuety\Handler
 * or Queuety\Step, as the plugin resolves handler names.
 */
final class Handlers
{
    /** @var array<string, callable|string> */
    private static array $handlers = [];

    /**
     * Resolved runners by name: the reflection a callable needs is done
     * once per name, not once per job.
     *
     * @var array<string, \Closure>
     */
    private static array $resolved = [];

    /**
     * @param callable|string $handler A callable, or a Handler/Step class name.
     */
    public static function register(string $name, callable|string $handler): void
    {
        self::$handlers[$name] = $handler;
        unset(self::$resolved[$name]);
    }

    public static function has(string $name): bool
    {
        return isset(self::$handlers[$name]) || Runtime::plugin_class($name) !== null || class_exists($name);
    }

    /**
     * What a name stands for: a registration here, else the plugin's
     * HandlerRegistry entry when the plugin is loaded, else the name.
     */
    private static function target(string $name): callable|string
    {
        return self::$handlers[$name] ?? Runtime::plugin_class($name) ?? $name;
    }

    /**
     * The class a name stands for, if it stands for one.
     */
    public static function class_name(string $name): ?string
    {
        $target = self::target($name);
        if (!is_string($target) || !class_exists($target)) {
            return null;
        }
        self::alias_from_attribute($target);
        return $target;
    }

    /**
     * A class named by #[QueuetyHandler('name')] answers to that name too
     * once it has been resolved, unless the name is taken: the plugin's
     * HandlerRegistry::auto_register_from_attribute.
     */
    private static function alias_from_attribute(string $class): void
    {
        $attrs = (new \ReflectionClass($class))->getAttributes(\Queuety\Attributes\QueuetyHandler::class);
        if ($attrs === []) {
            return;
        }
        $name = $attrs[0]->newInstance()->name;
        if (!isset(self::$handlers[$name])) {
            self::$handlers[$name] = $class;
        }
    }

    /**
     * What runs a job of this name: a closure taking the payload and the
     * job, returning a Step's output array or null. A class is built anew
     * for every job, as the plugin does.
     *
     * @return \Closure(array<mixed>, JobContext): (array<mixed>|null)
     * @throws \RuntimeException "Handler not found: <name>", Queuety's message, for an unknown name.
     */
    public static function resolve(string $name): \Closure
    {
        if (isset(self::$resolved[$name])) {
            return self::$resolved[$name];
        }
        $target = self::target($name);
        if (is_string($target) && class_exists($target)) {
            self::alias_from_attribute($target);
            return self::$resolved[$name] = self::for_class($target);
        }
        if (isset(self::$handlers[$name]) && is_callable($target)) {
            return self::$resolved[$name] = self::for_callable($target);
        }
        // Not remembered: a class may still be loaded or registered later.
        throw new \RuntimeException("Handler not found: {$name}");
    }

    /**
     * What runs a workflow step of this name, as the plugin's worker runs
     * one: for a for_each branch ($item true) a ForEachHandler's
     * handle_item(state, item, index), else a Step's handle(state). A
     * registered callable gets the state, plus the item and its index for
     * a branch. It returns the output array the engine merges.
     *
     * @return \Closure(array<mixed>, mixed, int): array<mixed>
     * @throws \RuntimeException "Handler not found: <name>" for an unknown name.
     */
    public static function resolve_step(string $name, bool $item): \Closure
    {
        $target = self::target($name);
        if (is_string($target) && class_exists($target)) {
            return static function (array $state, mixed $value, int $index) use ($target, $item): array {
                $instance = new $target();
                if ($item && $instance instanceof ForEachHandler) {
                    return $instance->handle_item($state, $value, $index);
                }
                if ($instance instanceof Step) {
                    return $instance->handle($state);
                }
                throw new \RuntimeException("Class {$target} must implement Step" . ($item ? ' or ForEachHandler' : '') . ' to run as a workflow step.');
            };
        }
        if (isset(self::$handlers[$name]) && is_callable($target)) {
            $closure = \Closure::fromCallable($target);
            return static function (array $state, mixed $value, int $index) use ($closure, $item): array {
                $output = $item ? $closure($state, $value, $index) : $closure($state);
                return is_array($output) ? $output : [];
            };
        }
        throw new \RuntimeException("Handler not found: {$name}");
    }

    /**
     * Calls a workflow's callable as the plugin does: a for_each reducer
     * ($kind "reducer": reduce(state, aggregate)), a repeat condition
     * ("condition": matches(state)) or a compensation, on_cancel or
     * on_deadline handler ("compensation": handle(state)), each with the
     * payload as last argument when it is not empty. The name is a class,
     * or a name registered with register() (a class or a callable, which
     * gets the same arguments).
     *
     * @param array<mixed> $state The public state (a reducer's with the aggregate under its key).
     * @param array<mixed> $aggregate A reducer's for_each aggregate.
     * @param array<mixed> $payload The structured handler's payload.
     * @return array<mixed>|null A reducer's output, a condition's ['matches' => bool], null for a compensation.
     * @throws \RuntimeException The plugin's message for an unknown reducer or condition class, or one
     *                           not implementing its contract. An unknown compensation is skipped, as
     *                           the plugin skips it.
     */
    public static function call_workflow_callable(string $kind, string $name, array $state, array $aggregate, array $payload): ?array
    {
        $args = $kind === 'reducer' ? [$state, $aggregate] : [$state];
        if ($payload !== []) {
            $args[] = $payload;
        }
        $target = self::target($name);
        $label = is_string($target) ? $target : $name;
        if (is_string($target) && $target !== '' && class_exists($target)) {
            $instance = new $target();
            $call = match ($kind) {
                'reducer' => $instance instanceof ForEachReducer || method_exists($instance, 'reduce')
                    ? $instance->reduce(...)
                    : throw new \RuntimeException("For-each reducer '{$target}' must implement reduce()."),
                'condition' => $instance instanceof RepeatCondition
                    ? $instance->matches(...)
                    : throw new \RuntimeException("Repeat condition '{$target}' must implement Queuety\\Contracts\\RepeatCondition."),
                'compensation' => $instance instanceof Compensation || method_exists($instance, 'handle')
                    ? $instance->handle(...)
                    : throw new \RuntimeException("Compensation '{$target}' must implement Queuety\\Contracts\\Compensation."),
                default => throw new \RuntimeException('Unknown request kind ' . json_encode($kind) . '.'),
            };
        } elseif (isset(self::$handlers[$name]) && is_callable($target)) {
            $call = \Closure::fromCallable($target);
        } elseif ($kind === 'compensation') {
            return null;
        } else {
            throw new \RuntimeException(match ($kind) {
                'reducer' => "For-each reducer class '{$name}' not found.",
                'condition' => "Repeat condition class '{$name}' not found.",
                default => 'Unknown request kind ' . json_encode($kind) . '.',
            });
        }
        $result = $call(...$args);
        return match ($kind) {
            'reducer' => is_array($result)
                ? $result
                : throw new \RuntimeException("For-each reducer '{$label}' must return an array."),
            'condition' => ['matches' => (bool) $result],
            default => null,
        };
    }

    /**
     * Forget every registration (for tests).
     */
    public static function reset(): void
    {
        self::$handlers = [];
        self::$resolved = [];
    }

    /**
     * @return \Closure(array<mixed>, JobContext): (array<mixed>|null)
     */
    private static function for_class(string $class): \Closure
    {
        return static function (array $payload) use ($class): ?array {
            $instance = new $class();
            if ($instance instanceof Handler) {
                $instance->handle($payload);
                return null;
            }
            if ($instance instanceof Step) {
                return $instance->handle($payload);
            }
            throw new \RuntimeException("Class {$class} must implement Handler or Step.");
        };
    }

    /**
     * Callables of the application declaring a second parameter get the
     * JobContext too; the others, and PHP's built-in functions, whose
     * second parameter means something else, get the payload alone.
     *
     * @return \Closure(array<mixed>, JobContext): (array<mixed>|null)
     */
    private static function for_callable(callable $callable): \Closure
    {
        $closure = \Closure::fromCallable($callable);
        $reflection = new \ReflectionFunction($closure);
        $wants_job = !$reflection->isInternal() && ($reflection->isVariadic() || $reflection->getNumberOfParameters() >= 2);
        return static function (array $payload, JobContext $job) use ($closure, $wants_job): ?array {
            $output = $wants_job ? $closure($payload, $job) : $closure($payload);
            return is_array($output) ? $output : null;
        };
    }
}
