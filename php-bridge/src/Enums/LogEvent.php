<?php

declare(strict_types=1);

namespace Queuety\Enums;

/**
 * The `event` column of the logs table, with the plugin's values.
 */
enum LogEvent: string
{
    case Started = 'started';
    case Completed = 'completed';
    case Failed = 'failed';
    case Buried = 'buried';
    case Retried = 'retried';
    case WorkflowStarted = 'workflow_started';
    case WorkflowCompleted = 'workflow_completed';
    case WorkflowFailed = 'workflow_failed';
    case WorkflowPaused = 'workflow_paused';
    case WorkflowResumed = 'workflow_resumed';
    case WorkflowCancelled = 'workflow_cancelled';
    case WorkflowRewound = 'workflow_rewound';
    case WorkflowForked = 'workflow_forked';
    case WorkflowDeadlineExceeded = 'workflow_deadline_exceeded';
    case Debug = 'debug';
}
