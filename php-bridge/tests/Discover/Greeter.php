<?php

declare(strict_types=1);

namespace Queuety\Tests\Discover;

use Queuety\Attributes\QueuetyHandler;
use Queuety\Handler;

/** Found by FluentApiTest's discover_handlers(): named by its attribute. */
#[QueuetyHandler('greet')]
final class Greeter implements Handler
{
    public function handle(array $payload): void
    {
    }

    public function config(): array
    {
        return [];
    }
}
