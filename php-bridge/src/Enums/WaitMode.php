<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * How a wait step settles: every awaited signal or workflow, any one of
 * them, or a quorum (workflow waits only). Stored as the value in _steps.
 */
enum WaitMode: string
{
    case All = 'all';
    case Any = 'any';
    case Quorum = 'quorum';
}
