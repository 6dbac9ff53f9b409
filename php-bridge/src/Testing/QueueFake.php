<?php

declare(strict_types=1);

namespace Queuety\Testing;

use PHPUnit\Framework\Assert;
use Queuety\Contracts\Job as JobContract;
use Queuety\JobSerializer;

/**
 * What Queuety::fake() records instead of writing jobs, with the
 * plugin's PHPUnit assertions: dispatch(), dispatch_job(), chain() and
 * batch() land here while the fake is on.
 */
class QueueFake
{
    /** @var array<string, list<array{handler: string, payload: array<mixed>, queue: string, instance: JobContract|null}>> */
    private array $pushed = [];
    /** @var list<array{jobs: array<mixed>, options: array<mixed>}> */
    private array $batches = [];

    /** @param array<mixed> $payload */
    public function push(string|JobContract $handler, array $payload = [], string $queue = 'default'): void
    {
        $class = $handler;
        if ($handler instanceof JobContract) {
            $serialized = JobSerializer::serialize($handler);
            $class = $serialized['handler'];
            $payload = $serialized['payload'];
        }
        $this->pushed[$class][] = ['handler' => $class, 'payload' => $payload, 'queue' => $queue, 'instance' => $handler instanceof JobContract ? $handler : null];
    }

    /**
     * @param array<mixed> $jobs
     * @param array<mixed> $options
     */
    public function push_batch(array $jobs, array $options = []): void
    {
        $this->batches[] = ['jobs' => $jobs, 'options' => $options];
    }

    public function assert_pushed(string $class, ?\Closure $callback = null): void
    {
        $jobs = $this->pushed[$class] ?? [];
        if ($jobs === []) {
            Assert::fail("The expected [{$class}] job was not pushed.");
        }
        if ($callback !== null) {
            $matching = array_filter($jobs, $callback);
            if ($matching === []) {
                Assert::fail("The expected [{$class}] job was pushed but no matching callback was found.");
            }
            Assert::assertNotEmpty($matching);
            return;
        }
        Assert::assertNotEmpty($jobs);
    }

    public function assert_pushed_times(string $class, int $count): void
    {
        $actual = count($this->pushed[$class] ?? []);
        Assert::assertSame($count, $actual, "The expected [{$class}] job was pushed {$actual} times instead of {$count} times.");
    }

    public function assert_not_pushed(string $class): void
    {
        $jobs = $this->pushed[$class] ?? [];
        if ($jobs !== []) {
            Assert::fail(sprintf('The unexpected [%s] job was pushed %d time(s).', $class, count($jobs)));
        }
        Assert::assertEmpty($jobs);
    }

    public function assert_nothing_pushed(): void
    {
        $total = array_sum(array_map('count', $this->pushed));
        if ($total > 0) {
            Assert::fail(sprintf('Expected no jobs to be pushed, but %d job(s) were pushed: [%s].', $total, implode(', ', array_keys($this->pushed))));
        }
        Assert::assertSame(0, $total);
    }

    public function assert_batched(?\Closure $callback = null): void
    {
        if ($this->batches === []) {
            Assert::fail('No batches were dispatched.');
        }
        if ($callback !== null) {
            $matching = array_filter($this->batches, $callback);
            if ($matching === []) {
                Assert::fail('A batch was dispatched but no matching callback was found.');
            }
            Assert::assertNotEmpty($matching);
            return;
        }
        Assert::assertNotEmpty($this->batches);
    }

    /** @return list<array{handler: string, payload: array<mixed>, queue: string, instance: JobContract|null}> */
    public function pushed(string $class): array
    {
        return $this->pushed[$class] ?? [];
    }

    /** @return list<array{jobs: array<mixed>, options: array<mixed>}> */
    public function batches(): array
    {
        return $this->batches;
    }

    public function reset(): void
    {
        $this->pushed = [];
        $this->batches = [];
    }
}
