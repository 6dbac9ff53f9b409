<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * A state machine row's status, with the plugin's values.
 */
enum StateMachineStatus: string
{
    case Running = 'running';
    case WaitingEvent = 'waiting_event';
    case Completed = 'completed';
    case Failed = 'failed';
    case Paused = 'paused';
    case Cancelled = 'cancelled';
}
