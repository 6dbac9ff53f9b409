<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * What a workflow step adds to its step_completed event, as the plugin's
 * ExecutionContext collects it: trace_input(), trace_output(),
 * trace_context(), the artifacts put during the step and a streaming
 * step's chunks. The runner sends it with the step's output under
 * `_queuety_trace`, the key the plugin's advance_step reads it from, and
 * the daemon's engine writes it on the event.
 *
 * With the plugin loaded its ExecutionContext collects instead (its
 * facade and ArtifactStore write there); consume() then reads that.
 */
final class Trace
{
    public const OUTPUT_KEY = '_queuety_trace';

    /** @var array<string, mixed> */
    private static array $trace = [];

    public static function set_input(mixed $input): void
    {
        self::$trace['input'] = $input;
    }

    public static function set_output(mixed $output): void
    {
        self::$trace['output'] = $output;
    }

    /**
     * @param array<mixed> $context
     */
    public static function add_context(array $context): void
    {
        self::$trace['context'] = array_merge(self::$trace['context'] ?? [], $context);
    }

    /**
     * @param array<string, mixed> $artifact
     */
    public static function add_artifact(array $artifact): void
    {
        self::$trace['artifacts'][] = $artifact;
    }

    /**
     * @param array<string, mixed> $chunk
     */
    public static function add_chunk(array $chunk): void
    {
        if (self::plugin_collects('add_trace_chunk')) {
            \Queuety\ExecutionContext::add_trace_chunk($chunk);
            return;
        }
        self::$trace['chunks'][] = $chunk;
    }

    /**
     * The trace collected since the last call, from whichever side
     * collected it; empty when nothing was added.
     *
     * @return array<string, mixed>
     */
    public static function consume(): array
    {
        if (self::plugin_collects('consume_trace')) {
            $trace = \Queuety\ExecutionContext::consume_trace();
            self::$trace = [];
            return is_array($trace) ? $trace : [];
        }
        $trace = self::$trace;
        self::$trace = [];
        return $trace;
    }

    /**
     * $output with the collected trace under OUTPUT_KEY (a trace the
     * step returned itself is kept, as the plugin merges both).
     *
     * @param array<mixed> $output
     * @return array<mixed>
     */
    public static function attach(array $output): array
    {
        $trace = self::consume();
        if ($trace === []) {
            return $output;
        }
        $own = $output[self::OUTPUT_KEY] ?? null;
        $output[self::OUTPUT_KEY] = is_array($own) ? array_merge($trace, $own) : $trace;
        return $output;
    }

    private static function plugin_collects(string $method): bool
    {
        return Runtime::plugin_loaded() && class_exists('Queuety\\ExecutionContext') && method_exists('Queuety\\ExecutionContext', $method);
    }
}
