<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * The named retry backoffs a step definition or handler config() may ask
 * for (a list of delays in seconds is the other form).
 */
enum BackoffStrategy: string
{
    case Fixed = 'fixed';
    case Linear = 'linear';
    case Exponential = 'exponential';
}
