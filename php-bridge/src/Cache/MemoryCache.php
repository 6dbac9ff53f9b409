<?php

declare(strict_types=1);

namespace Queuety\Cache;

use Queuety\Contracts\Cache;

/**
 * A per-process cache with expiry (the plugin's default without APCu).
 */
final class MemoryCache implements Cache
{
    /** @var array<string, array{value: mixed, expires: float|null}> */
    private array $items = [];

    public function get(string $key): mixed
    {
        return $this->has($key) ? $this->items[$key]['value'] : null;
    }

    public function set(string $key, mixed $value, int $ttl = 0): void
    {
        $this->items[$key] = ['value' => $value, 'expires' => $ttl > 0 ? microtime(true) + $ttl : null];
    }

    public function delete(string $key): void
    {
        unset($this->items[$key]);
    }

    public function has(string $key): bool
    {
        $item = $this->items[$key] ?? null;
        if ($item === null) {
            return false;
        }
        if ($item['expires'] !== null && $item['expires'] <= microtime(true)) {
            unset($this->items[$key]);
            return false;
        }
        return true;
    }

    public function add(string $key, mixed $value, int $ttl = 0): bool
    {
        if ($this->has($key)) {
            return false;
        }
        $this->set($key, $value, $ttl);
        return true;
    }

    public function flush(): void
    {
        $this->items = [];
    }
}
