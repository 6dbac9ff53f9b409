<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * Contracts\Job classes as the plugin stores and reads them, for the
 * worker (which must not call facade classes the plugin may have
 * replaced) and for the bridge's JobSerializer and JobMetadata.
 *
 * Row: handler = the class name, payload = the public properties except
 * the worker's settings (CONFIG_PROPERTIES), backed enums by value. Back:
 * payload keys go to the constructor's parameters of the same name.
 * Settings: the public properties' class default values.
 */
final class JobClasses
{
    public const CONTRACT = 'Queuety\\Contracts\\Job';

    /** Properties the worker reads as settings, never stored in the payload. */
    public const CONFIG_PROPERTIES = ['tries', 'timeout', 'max_exceptions', 'backoff', 'concurrency_group', 'concurrency_limit', 'cost_units'];

    /**
     * Whether $class is a Contracts\Job (the plugin's or the bridge's,
     * whichever is loaded).
     */
    public static function is_job_class(?string $class): bool
    {
        return $class !== null && interface_exists(self::CONTRACT) && class_exists($class)
            && (new \ReflectionClass($class))->implementsInterface(self::CONTRACT);
    }

    /**
     * @return array{handler: class-string, payload: array<string, mixed>}
     */
    public static function serialize(object $job): array
    {
        $payload = [];
        foreach ((new \ReflectionClass($job))->getProperties(\ReflectionProperty::IS_PUBLIC) as $prop) {
            if (in_array($prop->getName(), self::CONFIG_PROPERTIES, true)) {
                continue;
            }
            $payload[$prop->getName()] = self::plain($prop->getValue($job));
        }
        return ['handler' => get_class($job), 'payload' => $payload];
    }

    /**
     * @param array<mixed> $payload
     * @throws \RuntimeException The plugin's messages for a missing class or parameter.
     */
    public static function deserialize(string $class, array $payload): object
    {
        if (!class_exists($class)) {
            throw new \RuntimeException("Job class not found: {$class}");
        }
        $reflection = new \ReflectionClass($class);
        $args = [];
        foreach ($reflection->getConstructor()?->getParameters() ?? [] as $param) {
            $name = $param->getName();
            if (array_key_exists($name, $payload)) {
                $args[] = self::typed($payload[$name], $param);
            } elseif ($param->isDefaultValueAvailable()) {
                $args[] = $param->getDefaultValue();
            } else {
                throw new \RuntimeException("Missing required parameter '{$name}' for job class {$class}.");
            }
        }
        $instance = $reflection->newInstanceArgs($args);
        if (!is_a($instance, self::CONTRACT)) {
            throw new \RuntimeException("Class {$class} does not implement Contracts\\Job.");
        }
        return $instance;
    }

    /**
     * @return array{tries: ?int, timeout: ?int, max_exceptions: ?int, backoff: ?array<mixed>, concurrency_group: ?string, concurrency_limit: ?int, cost_units: ?int}
     */
    public static function metadata(string $class): array
    {
        $result = ['tries' => null, 'timeout' => null, 'max_exceptions' => null, 'backoff' => null, 'concurrency_group' => null, 'concurrency_limit' => null, 'cost_units' => null];
        if (!class_exists($class)) {
            return $result;
        }
        $reflection = new \ReflectionClass($class);
        $default = static function (string $name) use ($reflection): mixed {
            if (!$reflection->hasProperty($name)) {
                return null;
            }
            $prop = $reflection->getProperty($name);
            return $prop->isPublic() && $prop->hasDefaultValue() ? $prop->getDefaultValue() : null;
        };
        foreach (['tries', 'timeout', 'max_exceptions'] as $name) {
            $value = $default($name);
            $result[$name] = is_numeric($value) ? (int) $value : null;
        }
        $backoff = $default('backoff');
        $result['backoff'] = is_array($backoff) ? $backoff : null;
        $group = $default('concurrency_group');
        $group = trim(is_scalar($group) ? (string) $group : '');
        $result['concurrency_group'] = $group !== '' ? $group : null;
        $limit = $default('concurrency_limit');
        $limit = is_scalar($limit) ? (int) $limit : 0;
        $result['concurrency_limit'] = $limit > 0 && $result['concurrency_group'] !== null ? $limit : null;
        $cost = $default('cost_units');
        $cost = is_scalar($cost) ? (int) $cost : 0;
        $result['cost_units'] = $cost > 0 ? $cost : null;
        return $result;
    }

    private static function plain(mixed $value): mixed
    {
        if ($value instanceof \BackedEnum) {
            return $value->value;
        }
        return is_array($value) ? array_map(self::plain(...), $value) : $value;
    }

    private static function typed(mixed $value, \ReflectionParameter $param): mixed
    {
        $type = $param->getType();
        if ($type instanceof \ReflectionNamedType && !$type->isBuiltin() && enum_exists($type->getName())
            && (is_int($value) || is_string($value)) && (new \ReflectionEnum($type->getName()))->isBacked()) {
            return $type->getName()::from($value);
        }
        return $value;
    }
}
