<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\Priority;

/**
 * Queuety's fluent dispatch builder. The row is inserted by id(), or when
 * the builder is destroyed without it, as with the plugin:
 *
 *     Queuety::dispatch('send_email', ['to' => 'a@b.c'])->on_queue('mail')->delay(60);
 */
class PendingJob
{
    private string $queue = 'default';
    private Priority $priority = Priority::Low;
    private int $delay = 0;
    private int $max_attempts = 3;
    /** @var array{int, int}|null */
    private ?array $rate_limit_config = null;
    private bool $unique = false;
    private ?int $depends_on = null;
    private ?int $batch_id = null;
    private ?string $concurrency_group = null;
    private ?int $concurrency_limit = null;
    private int $cost_units = 1;
    private ?WorkerSessionOptions $worker_session = null;
    private bool $dispatched = false;
    private ?int $job_id = null;

    /**
     * @param array<mixed> $payload
     */
    public function __construct(
        private readonly string $handler,
        private readonly array $payload,
        private readonly Queue $queue_ops,
        private readonly ?Contracts\Job $job_instance = null,
    ) {
    }

    /** The job object dispatched (Queuety::dispatch(new SendEmail(…))), or null for a handler name. */
    public function get_job_instance(): ?Contracts\Job
    {
        return $this->job_instance;
    }

    public function __destruct()
    {
        if (!$this->dispatched) {
            $this->do_dispatch();
        }
    }

    public function on_queue(string $queue): self
    {
        $this->queue = $queue;
        return $this;
    }

    public function with_priority(Priority $priority): self
    {
        $this->priority = $priority;
        return $this;
    }

    public function delay(int $seconds): self
    {
        $this->delay = $seconds;
        return $this;
    }

    public function max_attempts(int $max): self
    {
        $this->max_attempts = $max;
        return $this;
    }

    /**
     * Kept for API compatibility. The plugin registers the limit only in
     * the dispatching process's memory, so no worker elsewhere sees it;
     * the bridge has no such in-process limiter and stores nothing either.
     */
    public function rate_limit(int $max, int $window): self
    {
        $this->rate_limit_config = [$max, $window];
        return $this;
    }

    /**
     * Skip the insert while a job with the same handler and payload bytes
     * is pending or processing (id() then returns that job's id).
     */
    public function unique(): self
    {
        $this->unique = true;
        return $this;
    }

    /**
     * Not claimable until job $job_id has completed.
     */
    public function after(int $job_id): self
    {
        $this->depends_on = $job_id;
        return $this;
    }

    public function in_batch(int $batch_id): self
    {
        $this->batch_id = $batch_id;
        return $this;
    }

    /**
     * At most $limit jobs of $group run at once, across all workers.
     *
     * @throws \InvalidArgumentException For an empty group or a limit below 1.
     */
    public function concurrency_group(string $group, int $limit): self
    {
        $group = trim($group);
        if ($group === '') {
            throw new \InvalidArgumentException('Job concurrency group cannot be empty.');
        }
        if ($limit < 1) {
            throw new \InvalidArgumentException('Job concurrency group limit must be at least 1.');
        }
        $this->concurrency_group = $group;
        $this->concurrency_limit = $limit;
        return $this;
    }

    /**
     * @throws \InvalidArgumentException For less than 1.
     */
    public function cost_units(int $units): self
    {
        if ($units < 1) {
            throw new \InvalidArgumentException('Job cost_units must be at least 1.');
        }
        $this->cost_units = $units;
        return $this;
    }

    /**
     * Bind the job to worker session $session_id: only a worker the
     * session admits (registered on its queue, advertising its
     * requirements) claims it. A queue set with on_queue() other than
     * 'default' wins; otherwise the session's queue is the job's.
     *
     * @throws \InvalidArgumentException For a blank session id (the library's message).
     */
    public function worker_session(string $session_id, ?WorkerSessionOptions $options = null): self
    {
        $this->worker_session = ($options ?? new WorkerSessionOptions())->withSessionId($session_id);
        return $this;
    }

    /**
     * Insert now (once) and return the job's id.
     */
    public function id(): int
    {
        if (!$this->dispatched) {
            $this->do_dispatch();
        }
        if ($this->job_id === null) {
            throw new \RuntimeException('Job dispatch did not produce an ID.');
        }
        return $this->job_id;
    }

    private function do_dispatch(): void
    {
        // Marked first: if the insert throws, the destructor must not try
        // again with the same builder.
        $this->dispatched = true;
        $session = $this->worker_session;
        $queue = $session?->queue !== null && $this->queue === 'default' ? $session->queue : $this->queue;
        $this->job_id = $this->queue_ops->dispatch(
            handler: $this->handler,
            payload: $this->payload,
            queue: $queue,
            priority: $this->priority,
            delay: $this->delay,
            max_attempts: $this->max_attempts,
            unique: $this->unique,
            depends_on: $this->depends_on,
            batch_id: $this->batch_id,
            concurrency_group: $this->concurrency_group,
            concurrency_limit: $this->concurrency_limit,
            cost_units: $this->cost_units,
            session_id: $session?->sessionId,
            worker_session: $session?->toNormalizedSnapshot($queue),
        );
    }
}
