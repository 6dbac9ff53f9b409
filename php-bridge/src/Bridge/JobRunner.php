<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * Runs one job request and builds its result frame. Whatever the handler
 * prints is captured and passed to stderr, which the daemon logs; every
 * Throwable becomes a failed result with PHP's class, message and trace,
 * which the daemon writes to the log row exactly as the plugin would.
 */
final class JobRunner
{
    /**
     * @param \Closure(int, array<mixed>): void $beat Sends a heartbeat frame for (seq, progress).
     */
    public function __construct(private readonly \Closure $beat)
    {
    }

    /**
     * @param array<mixed> $request A "run" frame.
     * @return array<mixed> Its "result" frame.
     */
    public function run(array $request): array
    {
        $seq = (int) ($request['seq'] ?? 0);
        $job = JobContext::from_array(is_array($request['job'] ?? null) ? $request['job'] : []);
        $payload = is_array($request['payload'] ?? null) ? $request['payload'] : [];

        $level = ob_get_level();
        ob_start(self::to_stderr(...), 8192);
        try {
            Runtime::enter($job, fn (array $progress) => ($this->beat)($seq, $progress), $payload);
            Trace::consume(); // nothing of an earlier job
            $kind = $request['kind'] ?? 'job';
            if (($kind === 'step' || $kind === 'item') && StreamingStepRunner::is_streaming($class = Handlers::class_name($job->handler))) {
                $output = StreamingStepRunner::run((string) $class, $job, is_array($request['state'] ?? null) ? $request['state'] : []);
            } elseif ($kind === 'step' || $kind === 'item') {
                // A workflow step: the daemon's engine merges the output.
                $state = is_array($request['state'] ?? null) ? $request['state'] : [];
                $output = Handlers::resolve_step($job->handler, $kind === 'item')(
                    $state,
                    $request['item'] ?? null,
                    (int) ($request['item_index'] ?? 0),
                );
            } elseif ($kind === 'reducer' || $kind === 'condition' || $kind === 'compensation') {
                // A workflow's reducer, repeat condition or compensation
                // (on_cancel and on_deadline handlers included).
                $output = Handlers::call_workflow_callable(
                    $kind,
                    (string) ($request['class'] ?? ''),
                    is_array($request['state'] ?? null) ? $request['state'] : [],
                    is_array($request['aggregate'] ?? null) ? $request['aggregate'] : [],
                    is_array($request['payload'] ?? null) ? $request['payload'] : [],
                );
            } elseif ($kind === 'call') {
                $output = ClassCall::run($request);
            } elseif ($kind === 'job' && JobClasses::is_job_class($class = Handlers::class_name($job->handler))) {
                // A Contracts\Job: its settings go with the result, so the
                // daemon retries and buries by them.
                $job_class = new JobClassRunner((string) $class, $job);
                $settings = $job_class->settings();
                $job_class->run($payload);
                $output = null;
            } elseif ($kind === 'job') {
                $output = Handlers::resolve($job->handler)($payload, $job);
            } else {
                throw new \RuntimeException('Unknown request kind ' . json_encode($kind) . '.');
            }
            if ($kind === 'step' || $kind === 'item') {
                // trace_*() calls, artifacts and chunks, for the step's
                // step_completed event, under the key advance_step reads.
                $traced = Trace::attach(is_array($output) ? $output : []);
                $output = $output === null && $traced === [] ? null : $traced;
            }
            $result = ['type' => 'result', 'seq' => $seq, 'ok' => true];
            if ($output !== null) {
                $result['output'] = $output;
            }
        } catch (\Throwable $e) {
            $result = ['type' => 'result', 'seq' => $seq, 'ok' => false, 'error' => self::error_of($e)];
            if (isset($settings) && $settings !== []) {
                $result['retry'] = $settings;
            }
        } finally {
            // Buffers the handler left open are flushed through ours.
            while (ob_get_level() > $level) {
                ob_end_flush();
            }
            Runtime::leave();
        }
        $result['memory'] = memory_get_usage(true);
        // The plugin's worker logs this as memory_peak_kb.
        $result['memory_peak_kb'] = intdiv(memory_get_peak_usage(true), 1024);
        return $result;
    }

    /**
     * What the plugin logs for a failure: get_class, message, trace.
     *
     * @return array{class: string, message: string, trace: string}
     */
    public static function error_of(\Throwable $e): array
    {
        return ['class' => get_class($e), 'message' => $e->getMessage(), 'trace' => $e->getTraceAsString()];
    }

    private static function to_stderr(string $buffer): string
    {
        if ($buffer !== '') {
            fwrite(STDERR, $buffer);
        }
        return '';
    }
}
