<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\JobClasses;
use Queuety\Bridge\Handlers;
use Queuety\Enums\Priority;

/**
 * Queuety::create_batch([...])->name()->on_queue()->then()->catch()
 * ->finally()->allow_failures()->dispatch(): the plugin's rows. The batch
 * row first (failed_job_ids "[]", options holding only the callbacks set,
 * "allow_failures":true only when set), then one job per entry with its
 * batch_id: Contracts\Job objects as serialized, arrays with their queue,
 * priority, delay and max_attempts (else the handler class's, else 3).
 * Running the jobs and the callbacks is the workers' part.
 */
class BatchBuilder
{
    private ?string $name = null;
    private string $queue = 'default';
    /** @var array<string, mixed> */
    private array $options = [];
    private bool $allow_failures = false;

    /**
     * @param list<mixed> $jobs
     */
    public function __construct(
        private readonly array $jobs,
        private readonly ?Connection $conn,
        private readonly Queue $queue_ops,
        private ?BatchManager $batch_manager = null,
    ) {
        $this->batch_manager ??= $conn !== null ? new BatchManager($conn) : throw new \InvalidArgumentException('A BatchBuilder needs a connection or a batch manager.');
    }

    public function name(string $name): self
    {
        $this->name = $name;
        return $this;
    }

    public function on_queue(string $queue): self
    {
        $this->queue = $queue;
        return $this;
    }

    public function then(string $handler_class): self
    {
        $this->options['then'] = $handler_class;
        return $this;
    }

    public function catch(string $handler_class): self
    {
        $this->options['catch'] = $handler_class;
        return $this;
    }

    public function finally(string $handler_class): self
    {
        $this->options['finally'] = $handler_class;
        return $this;
    }

    public function allow_failures(): self
    {
        $this->allow_failures = true;
        return $this;
    }

    public function dispatch(): Batch
    {
        $options = [];
        foreach (['then', 'catch', 'finally'] as $key) {
            if (isset($this->options[$key])) {
                $options[$key] = $this->options[$key];
            }
        }
        if ($this->allow_failures) {
            $options['allow_failures'] = true;
        }
        if ($this->queue_ops instanceof Testing\FakeQueue) {
            $this->queue_ops->recorder()->push_batch($this->jobs, $this->name === null ? $options : $options + ['name' => $this->name]);
        }
        $batch_id = $this->batch_manager->create(count($this->jobs), $this->name, $options);
        foreach ($this->jobs as $job) {
            if (is_object($job) && JobClasses::is_job_class(get_class($job))) {
                ['handler' => $handler, 'payload' => $payload] = JobClasses::serialize($job);
                $this->queue_ops->dispatch(handler: $handler, payload: $payload, queue: $this->queue, batch_id: $batch_id);
            } elseif (is_array($job) && is_string($job['handler'] ?? null)) {
                $class = Handlers::class_name($job['handler']);
                $default = $class !== null ? (HandlerMetadata::from_class($class)['max_attempts'] ?? 3) : 3;
                $this->queue_ops->dispatch(
                    handler: $job['handler'],
                    payload: is_array($job['payload'] ?? null) ? $job['payload'] : [],
                    queue: is_string($job['queue'] ?? null) ? $job['queue'] : $this->queue,
                    priority: ($job['priority'] ?? null) instanceof Priority ? $job['priority'] : Priority::Low,
                    delay: is_scalar($job['delay'] ?? null) ? (int) $job['delay'] : 0,
                    max_attempts: is_scalar($job['max_attempts'] ?? null) ? (int) $job['max_attempts'] : (int) $default,
                    batch_id: $batch_id,
                );
            }
        }
        return $this->batch_manager->find($batch_id) ?? throw new \RuntimeException("Batch {$batch_id} was created but could not be reloaded.");
    }
}
