<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;

/**
 * The plugin's Scheduler on the schedules table: add, remove, list, find,
 * enable, disable, and the tick that enqueues due schedules, with the
 * rules the Go daemon's tick follows so both may tick one table:
 *
 * - each due row is one transaction: a locking read that skips rows
 *   another tick holds, the job, and next_run moved past now (only if
 *   next_run is still what was read), committed together. However many
 *   processes tick, a due run is enqueued once;
 * - next_run counts from the tick (interval) or is the next matching
 *   minute after it (cron, UTC, day-of-month AND day-of-week);
 * - buffer leaves a run due while the handler is busy, as the plugin's
 *   docs say (the plugin's tick moves it a whole interval on);
 * - a row whose expression cannot be read is left alone.
 */
class Scheduler
{
    /** Interval items PHP's modify() reads as a move of the clock or calendar. */
    private const INTERVAL = '/^(?:[\s,]*[+-]*[ \t]*\d+[ \t]*(?:secs?|seconds?|mins?|minutes?|hours?|days?|weeks?|fortnights?|months?|years?)(?![a-z]))+[\s,]*$/i';

    public function __construct(
        private readonly Connection $conn,
        private readonly Queue $queue,
    ) {
    }

    /**
     * Write a schedule; next_run is its first run after now.
     *
     * @param array<mixed> $payload
     * @throws \InvalidArgumentException for an expression the scheduler cannot compute.
     */
    public function add(
        string $handler,
        array $payload,
        string $queue,
        string $expression,
        ExpressionType $type,
        OverlapPolicy $overlap_policy = OverlapPolicy::Allow,
    ): int {
        $next_run = $this->calculate_next_run($expression, $type);
        $stmt = $this->conn->pdo()->prepare(
            "INSERT INTO {$this->table()} (handler, payload, queue, expression, expression_type, next_run, overlap_policy)
            VALUES (:handler, :payload, :queue, :expression, :expression_type, :next_run, :overlap_policy)"
        );
        $stmt->execute([
            'handler' => $handler,
            'payload' => json_encode($payload, JSON_THROW_ON_ERROR),
            'queue' => $queue,
            'expression' => $expression,
            'expression_type' => $type->value,
            'next_run' => $next_run->format('Y-m-d H:i:s'),
            'overlap_policy' => $overlap_policy->value,
        ]);
        return (int) $this->conn->pdo()->lastInsertId();
    }

    /** Delete the schedule of a handler; true if there was one. */
    public function remove(string $handler): bool
    {
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$this->table()} WHERE handler = :handler");
        $stmt->execute(['handler' => $handler]);
        return $stmt->rowCount() > 0;
    }

    /**
     * @return list<Schedule>
     */
    public function list(): array
    {
        $stmt = $this->conn->pdo()->query("SELECT * FROM {$this->table()} ORDER BY id ASC");
        return array_map(static fn (array $row) => Schedule::from_row($row), $stmt === false ? [] : $stmt->fetchAll(\PDO::FETCH_ASSOC));
    }

    public function find(string $handler): ?Schedule
    {
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$this->table()} WHERE handler = :handler");
        $stmt->execute(['handler' => $handler]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? Schedule::from_row($row) : null;
    }

    public function enable(string $handler): void
    {
        $this->conn->pdo()->prepare("UPDATE {$this->table()} SET enabled = 1 WHERE handler = :handler")->execute(['handler' => $handler]);
    }

    public function disable(string $handler): void
    {
        $this->conn->pdo()->prepare("UPDATE {$this->table()} SET enabled = 0 WHERE handler = :handler")->execute(['handler' => $handler]);
    }

    /**
     * Enqueue one job per due schedule; returns how many.
     */
    public function tick(): int
    {
        $pdo = $this->conn->pdo();
        $now = gmdate('Y-m-d H:i:s');
        $due = $pdo->prepare("SELECT id FROM {$this->table()} WHERE enabled = 1 AND next_run <= :now ORDER BY id");
        $due->execute(['now' => $now]);
        $count = 0;
        foreach ($due->fetchAll(\PDO::FETCH_COLUMN) as $id) {
            $count += $this->tick_one((int) $id, $now);
        }
        return $count;
    }

    /**
     * The next run after $from (default now), in UTC.
     *
     * @throws \InvalidArgumentException
     */
    public function calculate_next_run(string $expression, ExpressionType $type, ?\DateTimeImmutable $from = null): \DateTimeImmutable
    {
        $from = ($from ?? new \DateTimeImmutable('now'))->setTimezone(new \DateTimeZone('UTC'));
        if ($type === ExpressionType::Cron) {
            return CronExpression::next_run($expression, $from);
        }
        $from = $from->setTime((int) $from->format('G'), (int) $from->format('i'), (int) $from->format('s'));
        $next = preg_match(self::INTERVAL, $expression) === 1 ? @$from->modify('+' . $expression) : false;
        if ($next === false) {
            throw new \InvalidArgumentException("Interval {$expression}: want whole numbers and units, e.g. \"10 minutes\" or \"1 hour 30 minutes\".");
        }
        if ($next <= $from) {
            throw new \InvalidArgumentException("Interval {$expression}: does not move time forward.");
        }
        return $next;
    }

    /** One due row in one transaction; 1 if a job was enqueued. */
    private function tick_one(int $id, string $now): int
    {
        $pdo = $this->conn->pdo();
        $pdo->beginTransaction();
        try {
            $lock = $pdo->prepare("SELECT * FROM {$this->table()} WHERE id = :id AND enabled = 1 AND next_run <= :now FOR UPDATE SKIP LOCKED");
            $lock->execute(['id' => $id, 'now' => $now]);
            $row = $lock->fetch(\PDO::FETCH_ASSOC);
            if (!is_array($row)) {
                $pdo->commit();
                return 0; // another tick has it, or ran it
            }
            $schedule = Schedule::from_row($row);
            try {
                $next = $this->calculate_next_run($schedule->expression, $schedule->expression_type,
                    new \DateTimeImmutable($now, new \DateTimeZone('UTC')));
            } catch (\InvalidArgumentException) {
                $pdo->commit();
                return 0; // left alone
            }
            if ($schedule->overlap_policy !== OverlapPolicy::Allow && $this->active($schedule->handler)) {
                if ($schedule->overlap_policy === OverlapPolicy::Skip) {
                    $this->ran($row, $now, $next);
                }
                $pdo->commit();
                return 0;
            }
            $enqueued = 0;
            if ($this->ran($row, $now, $next)) {
                $this->queue->dispatch(handler: $schedule->handler, payload: $schedule->payload, queue: $schedule->queue);
                $enqueued = 1;
            }
            $pdo->commit();
            return $enqueued;
        } catch (\Throwable $e) {
            $pdo->rollBack();
            throw $e;
        }
    }

    private function active(string $handler): bool
    {
        $stmt = $this->conn->pdo()->prepare(
            "SELECT COUNT(*) FROM {$this->conn->table(Config::table_jobs())} WHERE handler = :handler AND status IN ('pending', 'processing')"
        );
        $stmt->execute(['handler' => $handler]);
        return (int) $stmt->fetchColumn() > 0;
    }

    /**
     * last_run = now, next_run moved on, if next_run is what was read.
     *
     * @param array<string, mixed> $row
     */
    private function ran(array $row, string $now, \DateTimeImmutable $next): bool
    {
        $stmt = $this->conn->pdo()->prepare(
            "UPDATE {$this->table()} SET last_run = :last_run, next_run = :next_run WHERE id = :id AND next_run = :seen"
        );
        $stmt->execute(['last_run' => $now, 'next_run' => $next->format('Y-m-d H:i:s'), 'id' => $row['id'], 'seen' => $row['next_run']]);
        return $stmt->rowCount() === 1;
    }

    private function table(): string
    {
        return $this->conn->table(Config::table_schedules());
    }
}
