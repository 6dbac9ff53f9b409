<?php

declare(strict_types=1);

namespace Queuety\Tests\Discover;

use Queuety\Handler;

/** Found by FluentApiTest's discover_handlers() but not registered: no name. */
final class Unnamed implements Handler
{
    public function handle(array $payload): void
    {
    }

    public function config(): array
    {
        return [];
    }
}
