<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * When a for_each step settles: all branches, the first success, or a
 * quorum of successes. Stored as the value in _steps.
 */
enum ForEachMode: string
{
    case All = 'all';
    case FirstSuccess = 'first_success';
    case Quorum = 'quorum';
}
