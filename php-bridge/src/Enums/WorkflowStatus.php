<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * The seven values of workflows.status.
 */
enum WorkflowStatus: string
{
    case Running = 'running';
    case Completed = 'completed';
    case Failed = 'failed';
    case Paused = 'paused';
    case WaitingForSignal = 'waiting_for_signal';
    case WaitingForWorkflows = 'waiting_for_workflows';
    case Cancelled = 'cancelled';
}
