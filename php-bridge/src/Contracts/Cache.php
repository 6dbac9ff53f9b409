<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * The plugin's cache contract (Queuety::cache(), set_cache()).
 */
interface Cache
{
    public function get(string $key): mixed;

    public function set(string $key, mixed $value, int $ttl = 0): void;

    public function delete(string $key): void;

    public function has(string $key): bool;

    /** Set only when the key is absent; whether it was set. */
    public function add(string $key, mixed $value, int $ttl = 0): bool;

    public function flush(): void;
}
