<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\Batch;
use Queuety\Job;

/**
 * A "call" request: a method of a new instance of a class that is not a
 * job for the daemon (a batch callback, a chain's catch, a state action
 * or guard), called as the plugin's worker calls it.
 */
final class ClassCall
{
    /**
     * @param array<mixed> $request The "call" frame: class, method, args, options.
     * @return mixed What the method returned.
     * @throws \RuntimeException When the class cannot be used as asked.
     */
    public static function run(array $request): mixed
    {
        $class = trim((string) ($request['class'] ?? ''));
        $method = (string) ($request['method'] ?? '');
        $options = is_array($request['options'] ?? null) ? $request['options'] : [];
        $optional = !empty($options['optional']);
        $target = Handlers::class_name($class) ?? $class;
        if ($target === '' || !class_exists($target)) {
            if ($optional) {
                return null;
            }
            throw new \RuntimeException((string) ($options['missing_message'] ?? "Class '{$class}' could not be loaded."));
        }
        $instance = new $target();
        $contract = (string) ($options['contract'] ?? '');
        if ($contract !== '' && !$instance instanceof $contract) {
            throw new \RuntimeException((string) ($options['contract_message'] ?? "Class '{$class}' must implement {$contract}."));
        }
        if (!method_exists($instance, $method)) {
            if ($optional) {
                return null;
            }
            throw new \RuntimeException("Class '{$class}' has no method {$method}().");
        }
        $args = array_map(self::build(...), is_array($request['args'] ?? null) ? array_values($request['args']) : []);
        if (!empty($options['fit_arity'])) {
            $args = array_slice($args, 0, (new \ReflectionMethod($instance, $method))->getNumberOfParameters());
        }
        return $instance->{$method}(...$args);
    }

    /**
     * An argument, with the tagged ones built into the objects the plugin
     * passes.
     */
    private static function build(mixed $arg): mixed
    {
        if (!is_array($arg) || !isset($arg['__queuety_arg'])) {
            return $arg;
        }
        $row = is_array($arg['row'] ?? null) ? $arg['row'] : [];
        return match ($arg['__queuety_arg']) {
            'batch' => Batch::from_row($row),
            'job' => Job::from_row($row),
            'throwable' => self::throwable((string) ($arg['class'] ?? ''), (string) ($arg['message'] ?? '')),
            default => throw new \RuntimeException('Unknown argument kind ' . json_encode($arg['__queuety_arg']) . '.'),
        };
    }

    /**
     * The failure, as an instance of its class when PHP can build one
     * from a message, else a RuntimeException.
     */
    private static function throwable(string $class, string $message): \Throwable
    {
        if ($class !== '' && class_exists($class) && is_subclass_of($class, \Throwable::class)) {
            try {
                $e = new $class($message);
                if ($e instanceof \Throwable) {
                    return $e;
                }
            } catch (\Throwable) {
            }
        }
        return new \RuntimeException($message);
    }
}
