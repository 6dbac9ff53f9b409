<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\HandlerMetadata;

/**
 * Answers the daemon's "metadata" request: the dispatch and retry settings
 * a handler or step class declares (#[QueuetyHandler], #[QueuetyStep],
 * config()), read with HandlerMetadata::from_class, and for a Contracts\Job
 * class its JobMetadata under "job". The daemon asks once
 * per class and applies them where the plugin does: the step jobs it
 * enqueues, and the rate limit and retries of the jobs it claims.
 */
final class MetadataRequest
{
    /**
     * @param array<mixed> $request {"type":"run","seq":…,"kind":"metadata","class":…}
     * @return array<mixed> Its "result" frame; "output" is from_class's array.
     */
    public static function answer(array $request): array
    {
        $seq = (int) ($request['seq'] ?? 0);
        $name = (string) ($request['class'] ?? '');
        try {
            // A registered name stands for its class, as the plugin's
            // registry->class_name() resolves a handler alias.
            $class = Handlers::class_name($name) ?? $name;
            $output = HandlerMetadata::from_class($class);
            // A Contracts\Job's $tries, $timeout and $backoff, which the
            // plugin's worker reads (JobMetadata) in place of the row's and
            // the global limit: the daemon needs them before the job runs
            // (its time limit) and when no process runs it (the stale sweep).
            if (JobClasses::is_job_class($class)) {
                $output['job'] = JobClasses::metadata($class);
            }
            $result = ['type' => 'result', 'seq' => $seq, 'ok' => true, 'output' => $output];
        } catch (\Throwable $e) {
            // An autoloader that throws: the class has no readable settings.
            $result = ['type' => 'result', 'seq' => $seq, 'ok' => false, 'error' => JobRunner::error_of($e)];
        }
        $result['memory'] = memory_get_usage(true);
        return $result;
    }
}
