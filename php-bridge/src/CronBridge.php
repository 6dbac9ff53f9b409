<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety::replace_wp_cron() / restore_wp_cron() where WordPress's hook
 * functions exist (the bridge loaded in WordPress without the plugin):
 * recurring WP-Cron events become Queuety schedules (handler
 * `__queuety_cron_<hook>`, payload {wp_hook, wp_args}, every
 * `<interval> seconds`), as the plugin's CronBridge makes them. Without
 * WordPress there is no WP-Cron to replace: install() throws.
 *
 * @internal
 */
final class CronBridge
{
    private const FILTERS = [
        'pre_schedule_event' => ['intercept_schedule_event', 2],
        'pre_unschedule_event' => ['intercept_unschedule_event', 4],
        'pre_get_scheduled_event' => ['intercept_get_scheduled_event', 4],
    ];

    /** WordPress's intervals when wp_get_schedules() does not know the name. */
    private const INTERVALS = ['hourly' => 3600, 'twicedaily' => 43200, 'daily' => 86400, 'weekly' => 604800];

    private static bool $installed = false;

    /** @throws \LogicException Without WordPress's add_filter(). */
    public static function install(): void
    {
        if (self::$installed) {
            return;
        }
        if (!function_exists('add_filter')) {
            throw new \LogicException('Queuety::replace_wp_cron() needs WordPress: it hooks WP-Cron; without WordPress there is no WP-Cron, and `queuety work` runs the schedules table itself.');
        }
        if (!defined('DISABLE_WP_CRON')) {
            define('DISABLE_WP_CRON', true);
        }
        foreach (self::FILTERS as $filter => [$method, $args]) {
            \call_user_func('add_filter', $filter, [self::class, $method], 10, $args);
        }
        self::$installed = true;
    }

    /** @throws \LogicException Without WordPress's remove_filter(). */
    public static function uninstall(): void
    {
        if (!function_exists('remove_filter')) {
            throw new \LogicException('Queuety::restore_wp_cron() needs WordPress: it unhooks WP-Cron; without WordPress there is no WP-Cron to restore.');
        }
        if (!self::$installed) {
            return;
        }
        foreach (self::FILTERS as $filter => [$method]) {
            \call_user_func('remove_filter', $filter, [self::class, $method], 10);
        }
        self::$installed = false;
    }

    public static function is_installed(): bool
    {
        return self::$installed;
    }

    /**
     * A recurring event becomes a schedule (true: WordPress stores
     * nothing); a single event, an unknown interval or an error leaves
     * it to WP-Cron (null).
     */
    public static function intercept_schedule_event(mixed $pre, mixed $event): mixed
    {
        if ($pre !== null) {
            return $pre;
        }
        if (!is_object($event) || !is_string($event->hook ?? null) || $event->hook === '' || !is_string($event->schedule ?? null) || $event->schedule === '') {
            return null;
        }
        try {
            $interval = self::interval($event->schedule);
            if ($interval <= 0) {
                return null;
            }
            Queuety::schedule('__queuety_cron_' . $event->hook, [
                'wp_hook' => $event->hook,
                'wp_args' => is_array($event->args ?? null) ? $event->args : [],
            ])->every($interval . ' seconds')->id();
            return true;
        } catch (\Throwable) {
            return null;
        }
    }

    public static function intercept_unschedule_event(mixed $pre, mixed $timestamp, mixed $hook, mixed $args): mixed
    {
        if ($pre !== null) {
            return $pre;
        }
        try {
            $scheduler = Queuety::scheduler();
            if ($scheduler->find('__queuety_cron_' . $hook) !== null) {
                $scheduler->remove('__queuety_cron_' . $hook);
                return true;
            }
        } catch (\Throwable) {
        }
        return null;
    }

    public static function intercept_get_scheduled_event(mixed $pre, mixed $hook, mixed $args, mixed $timestamp): mixed
    {
        if ($pre !== null) {
            return $pre;
        }
        try {
            $schedule = Queuety::scheduler()->find('__queuety_cron_' . $hook);
            if ($schedule !== null) {
                return (object) ['hook' => $hook, 'timestamp' => $schedule->next_run->getTimestamp(), 'schedule' => $schedule->expression, 'args' => $args];
            }
        } catch (\Throwable) {
        }
        return null;
    }

    private static function interval(string $schedule): int
    {
        if (function_exists('wp_get_schedules')) {
            $schedules = \call_user_func('wp_get_schedules');
            if (isset($schedules[$schedule]['interval'])) {
                return (int) $schedules[$schedule]['interval'];
            }
        }
        return self::INTERVALS[$schedule] ?? 0;
    }
}
