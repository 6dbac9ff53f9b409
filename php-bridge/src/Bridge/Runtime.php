<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * Which Queuety classes are loaded, and how a job is set up in them.
 *
 * With --wp-load on a site where the plugin is active, the plugin's
 * Composer autoloader is prepended: every Queuety\* class the plugin also
 * defines (Heartbeat, Queuety, HandlerRegistry, Contracts\*, Middleware\*)
 * comes from the plugin, not from this bridge. The runner therefore calls
 * only Queuety\Bridge\* classes of its own, and reaches the shared names
 * through here, using the API of whichever side defined them: a handler's
 * Heartbeat::beat(), Queuety::put_current_artifact() or registered alias
 * then behaves as it does under the plugin's own worker.
 */
final class Runtime
{
    /**
     * True when Queuety\Queuety is the plugin's class (loaded from outside
     * this bridge's src/), i.e. the plugin is active in this process.
     */
    public static function plugin_loaded(): bool
    {
        if (!class_exists(\Queuety\Queuety::class)) {
            return false;
        }
        $file = (new \ReflectionClass(\Queuety\Queuety::class))->getFileName();
        return $file !== false && !str_starts_with(realpath($file) ?: $file, self::bridge_src());
    }

    /**
     * Sets the job up as the worker that runs it would: heartbeats and, with
     * the plugin, its ExecutionContext (current_workflow_id(),
     * put_current_artifact(), trace_*() read it).
     *
     * @param \Closure(array<mixed>): void $sender Sends a heartbeat frame to the daemon.
     * @param array<mixed> $payload
     */
    public static function enter(JobContext $job, \Closure $sender, array $payload): void
    {
        JobContext::set($job);
        if (method_exists(\Queuety\Heartbeat::class, 'bind')) {
            \Queuety\Heartbeat::bind($job->id, $sender);
        } elseif (self::plugin_loaded()) {
            // The plugin's Heartbeat writes the row itself (reserved_at,
            // heartbeat_data), as under its own worker; the daemon's
            // claim does not hold the row, and the write is harmless to
            // its fenced completion (reserved_by and attempts).
            $conn = self::plugin_connection();
            if ($conn !== null) {
                \Queuety\Heartbeat::init($job->id, $conn);
            }
        }
        if (self::plugin_loaded() && class_exists('Queuety\\ExecutionContext')) {
            \Queuety\ExecutionContext::enter($job->id, $job->workflow_id, $job->step_index, $payload);
        }
    }

    /**
     * Undoes enter().
     */
    public static function leave(): void
    {
        if (class_exists(\Queuety\Heartbeat::class)) {
            \Queuety\Heartbeat::clear();
        }
        if (self::plugin_loaded() && class_exists('Queuety\\ExecutionContext')) {
            \Queuety\ExecutionContext::clear();
        }
        JobContext::set(null);
    }

    /**
     * The class a handler name stands for in the plugin's HandlerRegistry
     * (Queuety::register aliases, #[QueuetyHandler] auto-registration,
     * HandlerDiscovery), or null without the plugin or for a name it does
     * not know.
     */
    public static function plugin_class(string $name): ?string
    {
        if (!self::plugin_loaded() || !method_exists(\Queuety\Queuety::class, 'registry')) {
            return null;
        }
        try {
            $registry = \Queuety\Queuety::registry();
        } catch (\Throwable) {
            return null; // the plugin was never initialised
        }
        if (!is_object($registry) || !method_exists($registry, 'class_name')) {
            return null;
        }
        $class = $registry->class_name($name);
        return is_string($class) ? $class : null;
    }

    /**
     * The facade's Connection (the plugin's or the bridge's), or null
     * before Queuety::init().
     */
    public static function connection(): ?object
    {
        try {
            $conn = \Queuety\Queuety::connection();
            return is_object($conn) && method_exists($conn, 'pdo') && method_exists($conn, 'table') ? $conn : null;
        } catch (\Throwable) {
            return null;
        }
    }

    /**
     * The plugin's Connection, or null when the plugin was not initialised.
     */
    public static function plugin_connection(): ?object
    {
        try {
            $conn = \Queuety\Queuety::connection();
            return is_object($conn) ? $conn : null;
        } catch (\Throwable) {
            return null;
        }
    }

    private static function bridge_src(): string
    {
        return (realpath(dirname(__DIR__)) ?: dirname(__DIR__)) . DIRECTORY_SEPARATOR;
    }
}
