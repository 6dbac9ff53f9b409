<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety's table names, from the same constants as the plugin:
 * QUEUETY_TABLE_PREFIX (default "queuety_", normalised to end in one "_",
 * empty for none) and one QUEUETY_TABLE_<NAME> per table, which replaces
 * the prefixed name as is. Connection::table() adds the WordPress prefix.
 */
final class Config
{
    /** Table suffixes by override constant, in the plugin's order. */
    public const TABLES = [
        'QUEUETY_TABLE_JOBS' => 'jobs',
        'QUEUETY_TABLE_WORKFLOWS' => 'workflows',
        'QUEUETY_TABLE_LOGS' => 'logs',
        'QUEUETY_TABLE_SCHEDULES' => 'schedules',
        'QUEUETY_TABLE_QUEUE_STATES' => 'queue_states',
        'QUEUETY_TABLE_WEBHOOKS' => 'webhooks',
        'QUEUETY_TABLE_SIGNALS' => 'signals',
        'QUEUETY_TABLE_WORKFLOW_DEPENDENCIES' => 'workflow_dependencies',
        'QUEUETY_TABLE_WORKFLOW_DISPATCH_KEYS' => 'workflow_dispatch_keys',
        'QUEUETY_TABLE_LOCKS' => 'locks',
        'QUEUETY_TABLE_BATCHES' => 'batches',
        'QUEUETY_TABLE_CHUNKS' => 'chunks',
        'QUEUETY_TABLE_WORKFLOW_EVENTS' => 'workflow_events',
        'QUEUETY_TABLE_ARTIFACTS' => 'artifacts',
        'QUEUETY_TABLE_STATE_MACHINES' => 'state_machines',
        'QUEUETY_TABLE_STATE_MACHINE_EVENTS' => 'state_machine_events',
    ];

    public static function table_prefix(): string
    {
        if (!defined('QUEUETY_TABLE_PREFIX')) {
            return 'queuety_';
        }
        $raw = constant('QUEUETY_TABLE_PREFIX');
        $prefix = is_scalar($raw) ? trim((string) $raw) : '';
        return $prefix === '' ? '' : rtrim($prefix, '_') . '_';
    }

    public static function table_jobs(): string
    {
        return self::table_name('QUEUETY_TABLE_JOBS');
    }

    public static function table_workflows(): string
    {
        return self::table_name('QUEUETY_TABLE_WORKFLOWS');
    }

    public static function table_logs(): string
    {
        return self::table_name('QUEUETY_TABLE_LOGS');
    }

    public static function table_schedules(): string
    {
        return self::table_name('QUEUETY_TABLE_SCHEDULES');
    }

    public static function table_queue_states(): string
    {
        return self::table_name('QUEUETY_TABLE_QUEUE_STATES');
    }

    public static function table_webhooks(): string
    {
        return self::table_name('QUEUETY_TABLE_WEBHOOKS');
    }

    public static function table_signals(): string
    {
        return self::table_name('QUEUETY_TABLE_SIGNALS');
    }

    public static function table_workflow_dependencies(): string
    {
        return self::table_name('QUEUETY_TABLE_WORKFLOW_DEPENDENCIES');
    }

    public static function table_workflow_dispatch_keys(): string
    {
        return self::table_name('QUEUETY_TABLE_WORKFLOW_DISPATCH_KEYS');
    }

    public static function table_locks(): string
    {
        return self::table_name('QUEUETY_TABLE_LOCKS');
    }

    public static function table_batches(): string
    {
        return self::table_name('QUEUETY_TABLE_BATCHES');
    }

    public static function table_chunks(): string
    {
        return self::table_name('QUEUETY_TABLE_CHUNKS');
    }

    public static function table_workflow_events(): string
    {
        return self::table_name('QUEUETY_TABLE_WORKFLOW_EVENTS');
    }

    public static function table_artifacts(): string
    {
        return self::table_name('QUEUETY_TABLE_ARTIFACTS');
    }

    public static function table_state_machines(): string
    {
        return self::table_name('QUEUETY_TABLE_STATE_MACHINES');
    }

    public static function table_state_machine_events(): string
    {
        return self::table_name('QUEUETY_TABLE_STATE_MACHINE_EVENTS');
    }

    /** QUEUETY_RETENTION_DAYS: purge()'s default age in days (7 unless defined). */
    public static function retention_days(): int
    {
        return defined('QUEUETY_RETENTION_DAYS') && is_numeric(constant('QUEUETY_RETENTION_DAYS')) ? (int) constant('QUEUETY_RETENTION_DAYS') : 7;
    }

    /**
     * A defined override is used as is (not trimmed, no shared prefix),
     * exactly as the plugin does.
     */
    private static function table_name(string $constant): string
    {
        if (defined($constant)) {
            $override = constant($constant);
            return is_scalar($override) ? (string) $override : '';
        }
        return self::table_prefix() . self::TABLES[$constant];
    }
}
