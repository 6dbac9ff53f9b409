<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;

/**
 * The `schedules` row Queuety::schedule() writes, as the plugin's
 * Scheduler::add: next_run now + the interval (DateTimeImmutable::modify),
 * or the next minute the cron expression matches (seconds 0, UTC;
 * day-of-month AND day-of-week, as the plugin matches them).
 */
final class ScheduleRows
{
    /**
     * @param array<mixed> $payload
     */
    public static function add(object $conn, string $handler, array $payload, string $queue, string $expression, ExpressionType $type, OverlapPolicy $overlap): int
    {
        $table = $conn->table(method_exists('Queuety\\Config', 'table_schedules') ? \Queuety\Config::table_schedules() : 'queuety_schedules');
        $conn->pdo()->prepare("INSERT INTO {$table} (handler, payload, queue, expression, expression_type, next_run, overlap_policy)
            VALUES (:handler, :payload, :queue, :expression, :expression_type, :next_run, :overlap_policy)")
            ->execute([
                'handler' => $handler, 'payload' => json_encode($payload, JSON_THROW_ON_ERROR), 'queue' => $queue,
                'expression' => $expression, 'expression_type' => $type->value,
                'next_run' => self::next_run($expression, $type, new \DateTimeImmutable('now', new \DateTimeZone('UTC')))->format('Y-m-d H:i:s'),
                'overlap_policy' => $overlap->value,
            ]);
        return (int) $conn->pdo()->lastInsertId();
    }

    public static function next_run(string $expression, ExpressionType $type, \DateTimeImmutable $from): \DateTimeImmutable
    {
        if ($type === ExpressionType::Interval) {
            $next = @$from->modify('+' . $expression);
            return $next ?: throw new \InvalidArgumentException("Invalid schedule interval: {$expression}");
        }
        $fields = preg_split('/\s+/', trim($expression));
        if ($fields === false || count($fields) !== 5) {
            throw new \InvalidArgumentException("Cron expression must have exactly 5 fields, got: {$expression}");
        }
        [$minute, $hour, $dom, $month, $dow] = $fields;
        $t = $from->setTime((int) $from->format('G'), (int) $from->format('i'), 0)->modify('+1 minute');
        $max = $from->modify('+1 year');
        while ($t <= $max) {
            if (!self::field($month, (int) $t->format('n'), 1, 12)) {
                $t = $t->modify('first day of next month')->setTime(0, 0, 0);
            } elseif (!self::field($dom, (int) $t->format('j'), 1, 31) || !self::field($dow, (int) $t->format('w'), 0, 7)) {
                $t = $t->modify('+1 day')->setTime(0, 0, 0);
            } elseif (!self::field($hour, (int) $t->format('G'), 0, 23)) {
                $t = $t->setTime((int) $t->format('G'), 0, 0)->modify('+1 hour');
            } elseif (!self::field($minute, (int) $t->format('i'), 0, 59)) {
                $t = $t->modify('+1 minute');
            } else {
                return $t;
            }
        }
        throw new \InvalidArgumentException("No matching time found within 1 year for expression: {$expression}");
    }

    /**
     * One cron field: lists, steps (of * or a range), ranges, *, a number
     * (7 is Sunday in day-of-week).
     */
    private static function field(string $field, int $value, int $min, int $max): bool
    {
        if (str_contains($field, ',')) {
            foreach (explode(',', $field) as $part) {
                if (self::field(trim($part), $value, $min, $max)) {
                    return true;
                }
            }
            return false;
        }
        if (str_contains($field, '/')) {
            [$range, $step] = explode('/', $field, 2);
            $step = max(1, (int) $step);
            if ($range === '*') {
                return ($value - $min) % $step === 0;
            }
            if (str_contains($range, '-')) {
                [$lo, $hi] = array_map('intval', explode('-', $range, 2));
                return $value >= $lo && $value <= $hi && ($value - $lo) % $step === 0;
            }
            return false;
        }
        if (str_contains($field, '-')) {
            [$lo, $hi] = array_map('intval', explode('-', $field, 2));
            return $value >= $lo && $value <= $hi;
        }
        if ($field === '*') {
            return true;
        }
        $n = (int) $field;
        return $value === ($max === 7 && $n === 7 ? 0 : $n);
    }
}
