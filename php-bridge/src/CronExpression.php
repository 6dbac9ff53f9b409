<?php

declare(strict_types=1);

namespace Queuety;

/**
 * 5-field cron expressions as Queuety's scheduler reads them: numbers, *,
 * ranges (1-5), steps (*&#47;15, 0-30/5) and lists (1,3,5); day-of-week 7 is
 * Sunday; times in UTC; a day must match both the day-of-month and the
 * day-of-week field (classic cron takes either when both are set).
 *
 * Forms the plugin reads in surprising ways are refused, as the Go daemon
 * refuses them: names (MON, JAN) and "?", which the plugin casts to 0, and
 * a step after a single number ("5/10"), which it never matches.
 */
final class CronExpression
{
    /** Bounds of minute, hour, day-of-month, month, day-of-week. */
    private const BOUNDS = [[0, 59], [0, 23], [1, 31], [1, 12], [0, 6]];

    /**
     * The first matching minute after $after's minute.
     *
     * @throws \InvalidArgumentException for a malformed expression, or none within a year.
     */
    public static function next_run(string $expression, \DateTimeImmutable $after): \DateTimeImmutable
    {
        [$minutes, $hours, $days, $months, $weekdays] = self::parse($expression);
        $utc = new \DateTimeZone('UTC');
        $from = $after->setTimezone($utc);
        $t = $from->setTime((int) $from->format('G'), (int) $from->format('i'), 0)->modify('+1 minute');
        $limit = $from->modify('+1 year');
        while ($t <= $limit) {
            if (!isset($months[(int) $t->format('n')])) {
                $t = $t->modify('first day of next month')->setTime(0, 0, 0);
            } elseif (!isset($days[(int) $t->format('j')]) || !isset($weekdays[(int) $t->format('w')])) {
                $t = $t->modify('+1 day')->setTime(0, 0, 0);
            } elseif (!isset($hours[(int) $t->format('G')])) {
                $t = $t->setTime((int) $t->format('G'), 0, 0)->modify('+1 hour');
            } elseif (!isset($minutes[(int) $t->format('i')])) {
                $t = $t->modify('+1 minute');
            } else {
                return $t;
            }
        }
        throw new \InvalidArgumentException("Cron expression {$expression}: no matching time within a year.");
    }

    /**
     * The value sets of the five fields (value => true).
     *
     * @return list<array<int, true>>
     * @throws \InvalidArgumentException
     */
    public static function parse(string $expression): array
    {
        $fields = preg_split('/\s+/', trim($expression), -1, PREG_SPLIT_NO_EMPTY) ?: [];
        if (count($fields) !== 5) {
            throw new \InvalidArgumentException(sprintf(
                'Cron expression %s: want 5 fields (minute hour day-of-month month day-of-week), got %d.', $expression, count($fields)));
        }
        $sets = [];
        foreach ($fields as $i => $field) {
            $sets[] = self::field($expression, $i, $field);
        }
        return $sets;
    }

    /**
     * @return array<int, true>
     */
    private static function field(string $expression, int $i, string $field): array
    {
        [$lo, $hi] = self::BOUNDS[$i];
        $set = [];
        foreach (explode(',', $field) as $part) {
            $bad = static fn (string $why) => new \InvalidArgumentException(
                sprintf('Cron expression %s: field %d "%s": %s.', $expression, $i + 1, $field, $why));
            if (!preg_match('#^(\*|\d+(?:-\d+)?)(?:/(\d+))?$#', $part, $m)) {
                throw $bad('only numbers, *, ranges (1-5), steps (*/15) and lists (1,3,5)');
            }
            $step = isset($m[2]) ? (int) $m[2] : 1;
            if ($step < 1) {
                throw $bad('a step must be at least 1');
            }
            if ($m[1] === '*') {
                [$from, $to] = [$lo, $hi];
            } elseif (str_contains($m[1], '-')) {
                [$from, $to] = array_map('intval', explode('-', $m[1], 2));
                if ($i === 4 && $to === 7) {
                    $to = 6; // the values run 0-6: "5-7" is Friday and Saturday
                }
            } else {
                if (isset($m[2])) {
                    throw $bad('a step needs * or a range before it');
                }
                $from = $to = ($i === 4 && (int) $m[1] === 7) ? 0 : (int) $m[1];
            }
            if ($from < $lo || $to > $hi || $from > $to) {
                throw $bad("values run {$lo}-{$hi}");
            }
            for ($v = $from; $v <= $to; $v += $step) {
                $set[$v] = true;
            }
        }
        return $set;
    }
}
