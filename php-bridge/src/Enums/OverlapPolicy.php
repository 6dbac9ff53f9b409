<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * What a due schedule does while a job of its handler is still pending or
 * running.
 */
enum OverlapPolicy: string
{
    case Allow = 'allow';
    case Skip = 'skip';
    case Buffer = 'buffer';
}
