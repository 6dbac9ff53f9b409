<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * How schedules.expression is read (schedules.expression_type).
 */
enum ExpressionType: string
{
    /** A PHP relative interval ("10 minutes"), counted from each tick. */
    case Interval = 'interval';
    /** A 5-field cron expression, in UTC. */
    case Cron = 'cron';
}
