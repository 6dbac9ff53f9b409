<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\Handlers;

/**
 * Handler names registered in this process (Queuety::register()); the
 * same registry the pool worker resolves names with.
 */
class HandlerRegistry
{
    /** @param class-string $class */
    public function register(string $name, string $class): void
    {
        Handlers::register($name, $class);
    }

    /** The class registered under the name, or null. */
    public function class_name(string $name): ?string
    {
        return Handlers::class_name($name);
    }

    public function has(string $name): bool
    {
        return Handlers::has($name);
    }

    /**
     * An instance of the name's class (registered, or the name itself as
     * a class).
     *
     * @throws \RuntimeException For an unknown name.
     */
    public function resolve(string $name): object
    {
        $class = $this->class_name($name) ?? (class_exists($name) ? $name : null)
            ?? throw new \RuntimeException("Handler '{$name}' is not registered and is not a class.");
        return new $class();
    }
}
