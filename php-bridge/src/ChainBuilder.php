<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\JobClasses;

/**
 * Queuety::chain([...])->on_queue('q')->catch(Handler::class)->dispatch():
 * the plugin's rows, one per link, each depending on the one before
 * (depends_on); links are Contracts\Job objects or ['handler' => …,
 * 'payload' => …] arrays; the catch class is appended to every payload
 * as __chain_catch; max_attempts is always 3 (a job class's $tries
 * applies when it runs). Returns the first job's id.
 */
class ChainBuilder
{
    private string $queue = 'default';
    private ?string $catch_handler = null;

    /**
     * @param list<mixed> $jobs
     */
    public function __construct(private readonly array $jobs, private readonly Queue $queue_ops)
    {
    }

    public function on_queue(string $queue): self
    {
        $this->queue = $queue;
        return $this;
    }

    public function catch(string $handler_class): self
    {
        $this->catch_handler = $handler_class;
        return $this;
    }

    public function dispatch(): int
    {
        $first = null;
        $previous = null;
        foreach ($this->jobs as $job) {
            if (is_object($job) && JobClasses::is_job_class(get_class($job))) {
                ['handler' => $handler, 'payload' => $payload] = JobClasses::serialize($job);
            } elseif (is_array($job) && isset($job['handler'])) {
                $handler = (string) $job['handler'];
                $payload = is_array($job['payload'] ?? null) ? $job['payload'] : [];
            } else {
                continue;
            }
            if ($this->catch_handler !== null) {
                $payload['__chain_catch'] = $this->catch_handler;
            }
            $previous = $this->queue_ops->dispatch(handler: $handler, payload: $payload, queue: $this->queue, depends_on: $previous);
            $first ??= $previous;
        }
        return $first ?? 0;
    }
}
