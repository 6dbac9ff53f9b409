<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\ScheduleRows;
use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;

/**
 * Queuety::schedule('report', [...])->every('10 minutes')->on_queue('q')
 * ->overlap(OverlapPolicy::Skip): a `schedules` row, written at id() or
 * when the builder goes out of scope, as the plugin's. Ticking due
 * schedules is the workers' part.
 */
class PendingSchedule
{
    private ?string $expression = null;
    private ?ExpressionType $type = null;
    private string $queue = 'default';
    private OverlapPolicy $overlap = OverlapPolicy::Allow;
    private ?int $id = null;

    /**
     * @param array<mixed> $payload
     */
    public function __construct(private readonly string $handler, private readonly array $payload, private readonly Connection $conn)
    {
    }

    public function __destruct()
    {
        if ($this->id === null && $this->expression !== null) {
            $this->write();
        }
    }

    public function every(string $interval): self
    {
        [$this->expression, $this->type] = [$interval, ExpressionType::Interval];
        return $this;
    }

    public function cron(string $expression): self
    {
        [$this->expression, $this->type] = [$expression, ExpressionType::Cron];
        return $this;
    }

    public function overlap(OverlapPolicy $policy): self
    {
        $this->overlap = $policy;
        return $this;
    }

    public function on_queue(string $queue): self
    {
        $this->queue = $queue;
        return $this;
    }

    public function id(): int
    {
        return $this->id ?? $this->write();
    }

    private function write(): int
    {
        if ($this->expression === null || $this->type === null) {
            throw new \RuntimeException('Schedule expression not set. Call every() or cron() before dispatching.');
        }
        return $this->id = ScheduleRows::add($this->conn, $this->handler, $this->payload, $this->queue, $this->expression, $this->type, $this->overlap);
    }
}
