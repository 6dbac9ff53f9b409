<?php

declare(strict_types=1);

namespace Queuety\Attributes;

use Attribute;

/**
 * Queuety's handler attribute. The bridge reads queue and max_attempts as
 * dispatch defaults, as the plugin does; needs_wordpress is ignored there
 * too.
 */
#[Attribute(Attribute::TARGET_CLASS)]
readonly class QueuetyHandler
{
    public function __construct(
        public string $name,
        public string $queue = 'default',
        public int $max_attempts = 3,
        public bool $needs_wordpress = false,
    ) {
    }
}
