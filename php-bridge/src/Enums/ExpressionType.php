<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * How a schedule's expression reads: an interval ("10 minutes") or a
 * five-field cron expression.
 */
enum ExpressionType: string
{
    case Interval = 'interval';
    case Cron = 'cron';
}
