<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;

/**
 * The plugin's fluent schedule builder: Queuety::schedule($handler,
 * $payload)->every('1 hour')|cron('0 3 * * *')->on_queue(…)->overlap(…).
 * The row is written by id(), or when the builder is destroyed.
 */
class PendingSchedule
{
    private ?string $expression = null;
    private ?ExpressionType $expression_type = null;
    private string $queue = 'default';
    private OverlapPolicy $overlap_policy = OverlapPolicy::Allow;
    private bool $dispatched = false;
    private ?int $schedule_id = null;

    /**
     * @param array<mixed> $payload
     */
    public function __construct(
        private readonly string $handler,
        private readonly array $payload,
        private readonly Scheduler $scheduler,
    ) {
    }

    public function __destruct()
    {
        if (!$this->dispatched) {
            $this->do_dispatch();
        }
    }

    /** An interval, e.g. '1 hour', '30 minutes'. */
    public function every(string $interval): self
    {
        $this->expression = $interval;
        $this->expression_type = ExpressionType::Interval;
        return $this;
    }

    /** A 5-field cron expression, e.g. '0 3 * * *'. */
    public function cron(string $expression): self
    {
        $this->expression = $expression;
        $this->expression_type = ExpressionType::Cron;
        return $this;
    }

    public function overlap(OverlapPolicy $policy): self
    {
        $this->overlap_policy = $policy;
        return $this;
    }

    public function on_queue(string $queue): self
    {
        $this->queue = $queue;
        return $this;
    }

    /** The schedule's id, writing the row first if not yet written. */
    public function id(): int
    {
        if (!$this->dispatched) {
            $this->do_dispatch();
        }
        return $this->schedule_id ?? throw new \RuntimeException('Schedule dispatch did not produce an ID.');
    }

    private function do_dispatch(): void
    {
        // Marked first: a failed add must not be tried again by the
        // destructor.
        $this->dispatched = true;
        if ($this->expression === null || $this->expression_type === null) {
            throw new \RuntimeException('Schedule expression not set. Call every() or cron() before dispatching.');
        }
        $this->schedule_id = $this->scheduler->add(
            handler: $this->handler,
            payload: $this->payload,
            queue: $this->queue,
            expression: $this->expression,
            type: $this->expression_type,
            overlap_policy: $this->overlap_policy,
        );
    }
}
