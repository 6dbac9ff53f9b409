<?php

declare(strict_types=1);

namespace Queuety\Attributes;

use Attribute;

/**
 * Queuety's step attribute: max_attempts is a dispatch default.
 */
#[Attribute(Attribute::TARGET_CLASS)]
readonly class QueuetyStep
{
    public function __construct(
        public bool $needs_wordpress = false,
        public int $max_attempts = 3,
    ) {
    }
}
