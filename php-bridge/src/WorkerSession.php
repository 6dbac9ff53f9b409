<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ForEachMode;

/**
 * The handle WorkflowBuilder::worker_session() returns (the seed's
 * `$session = Workflow::workerSession('gpu-render', $options)`). The steps
 * it adds carry a `worker_session` key with the options snapshot, so their
 * jobs (the single step's, each parallel branch's, each for_each item's)
 * are claimed only by a worker the session admits. Those jobs run on the
 * step's own queue when the definition gives one, else on the session's
 * queue, else on the workflow's.
 */
final class WorkerSession
{
    /**
     * @param array<string, mixed> $snapshot WorkerSessionOptions::toSnapshot()
     */
    public function __construct(
        private readonly WorkflowBuilder $builder,
        private readonly array $snapshot,
    ) {
    }

    public function id(): string
    {
        $id = $this->snapshot['session_id'];
        \assert(is_string($id));
        return $id;
    }

    public function builder(): WorkflowBuilder
    {
        return $this->builder;
    }

    public function then(string $handler_class, ?string $name = null): self
    {
        $this->builder->then($handler_class, $name);
        $this->builder->bind_last_step_to_worker_session($this->snapshot);
        return $this;
    }

    /**
     * @param array<int, string> $handler_classes
     */
    public function parallel(array $handler_classes): self
    {
        $this->builder->parallel($handler_classes);
        $this->builder->bind_last_step_to_worker_session($this->snapshot);
        return $this;
    }

    /**
     * Every item job is bound; the placeholder job that plans them is not.
     */
    public function for_each(
        string $items_key,
        string $handler_class,
        ?string $result_key = null,
        ForEachMode $mode = ForEachMode::All,
        ?int $quorum = null,
        ?string $reducer_class = null,
        ?string $name = null,
    ): self {
        $this->builder->for_each($items_key, $handler_class, $result_key, $mode, $quorum, $reducer_class, $name);
        $this->builder->bind_last_step_to_worker_session($this->snapshot);
        return $this;
    }

    /**
     * @throws \RuntimeException Before any step is added.
     */
    public function compensate_with(string $handler_class): self
    {
        $this->builder->compensate_with($handler_class);
        return $this;
    }
}
