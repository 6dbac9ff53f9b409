<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * What a scheduler tick does while the schedule's handler still has a
 * pending or processing job (schedules.overlap_policy).
 */
enum OverlapPolicy: string
{
    /** Dispatch anyway (the default). */
    case Allow = 'allow';
    /** No job; last_run and next_run move on as if it ran. */
    case Skip = 'skip';
    /** No job; the run stays due until a tick finds the handler idle. */
    case Buffer = 'buffer';
}
