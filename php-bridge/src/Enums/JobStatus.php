<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * The five values of jobs.status.
 */
enum JobStatus: string
{
    case Pending = 'pending';
    case Processing = 'processing';
    case Completed = 'completed';
    case Failed = 'failed';
    case Buried = 'buried';
}
