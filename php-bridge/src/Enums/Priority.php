<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * Job priority, as Queuety stores it in jobs.priority: a higher value is
 * claimed first.
 */
enum Priority: int
{
    case Low = 0;
    case Normal = 1;
    case High = 2;
    case Urgent = 3;
}
