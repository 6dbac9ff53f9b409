<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Attributes\QueuetyHandler;
use Queuety\Attributes\QueuetyStep;
use Queuety\Enums\Priority;
use Queuety\Handler;
use Queuety\Queuety;
use Queuety\Step;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * PendingJob's fluent options land in the columns Queue::dispatch writes.
 */
final class PendingJobTest extends DatabaseTestCase
{
    public function test_options_land_in_their_columns(): void
    {
        $id = Queuety::dispatch('send_email', ['to' => 'zoë@example.com'])
            ->on_queue('mail')
            ->with_priority(Priority::Urgent)
            ->delay(120)
            ->max_attempts(7)
            ->concurrency_group('  smtp  ', 2)
            ->cost_units(5)
            ->in_batch(9)
            ->rate_limit(10, 60)
            ->id();
        $row = $this->job($id);
        $this->assertSame('mail', $row['queue']);
        $this->assertSame('send_email', $row['handler']);
        $this->assertSame('{"to":"zo\u00eb@example.com"}', $row['payload']);
        $this->assertNull($row['payload_hash'], 'only unique jobs are hashed');
        $this->assertSame('3', $row['priority']);
        $this->assertSame('pending', $row['status']);
        $this->assertSame('0', $row['attempts']);
        $this->assertSame('7', $row['max_attempts']);
        $this->assertSame('smtp', $row['concurrency_group'], 'trimmed');
        $this->assertSame('2', $row['concurrency_limit']);
        $this->assertSame('5', $row['cost_units']);
        $this->assertSame('9', $row['batch_id']);
        $this->assertNull($row['depends_on']);
        $this->assertEqualsWithDelta(time() + 120, strtotime($row['available_at'] . ' UTC'), 2, 'gmdate(time() + delay)');
    }

    public function test_defaults(): void
    {
        $row = $this->job(Queuety::dispatch('noop')->id());
        $this->assertSame(['default', '[]', null, '0', '3', '1', null, null], [
            $row['queue'], $row['payload'], $row['payload_hash'], $row['priority'], $row['max_attempts'],
            $row['cost_units'], $row['concurrency_group'], $row['concurrency_limit'],
        ]);
    }

    public function test_the_row_is_inserted_on_destruct_and_once(): void
    {
        Queuety::dispatch('fire_and_forget', ['n' => 1])->on_queue('q');
        $this->assertSame(1, Queuety::stats('q')['pending'], 'the unused builder was destroyed at once');

        $pending = Queuety::dispatch('twice');
        $id = $pending->id();
        $this->assertSame($id, $pending->id());
        unset($pending);
        $this->assertSame(2, Queuety::stats()['pending']);
    }

    public function test_unique_returns_the_pending_twin_until_it_is_done(): void
    {
        $first = Queuety::dispatch('report', ['day' => '2026-01-01'])->unique()->id();
        $this->assertSame($first, Queuety::dispatch('report', ['day' => '2026-01-01'])->unique()->id());
        $this->assertNotSame($first, Queuety::dispatch('other', ['day' => '2026-01-01'])->unique()->id(), 'the handler is compared too');
        $this->assertNotSame($first, Queuety::dispatch('report', ['day' => '2026-01-02'])->unique()->id());
        $this->assertSame(hash('sha256', '{"day":"2026-01-01"}'), $this->job($first)['payload_hash']);

        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'completed' WHERE id = {$first}");
        $this->assertNotSame($first, Queuety::dispatch('report', ['day' => '2026-01-01'])->unique()->id(), 'a done twin does not count');
    }

    public function test_after_sets_depends_on(): void
    {
        $a = Queuety::dispatch('a')->id();
        $this->assertSame((string) $a, $this->job(Queuety::dispatch('b')->after($a)->id())['depends_on']);
    }

    public function test_invalid_options_throw_the_plugins_messages(): void
    {
        $pending = Queuety::dispatch('x');
        foreach ([
            'Job concurrency group cannot be empty.' => static fn () => $pending->concurrency_group('  ', 1),
            'Job concurrency group limit must be at least 1.' => static fn () => $pending->concurrency_group('g', 0),
            'Job cost_units must be at least 1.' => static fn () => $pending->cost_units(0),
        ] as $message => $call) {
            try {
                $call();
                $this->fail("no exception for: {$message}");
            } catch (\InvalidArgumentException $e) {
                $this->assertSame($message, $e->getMessage());
            }
        }
        $pending->id();
    }

    public function test_a_handler_class_supplies_its_defaults(): void
    {
        $row = $this->job(Queuety::dispatch(ConfiguredHandler::class)->id());
        $this->assertSame(['reports', '6', 'pdf', '2', '4'], [$row['queue'], $row['max_attempts'], $row['concurrency_group'], $row['concurrency_limit'], $row['cost_units']]);

        $row = $this->job(Queuety::dispatch(ConfiguredHandler::class)->on_queue('later')->max_attempts(1)->id());
        $this->assertSame(['later', '1'], [$row['queue'], $row['max_attempts']], 'fluent calls win over the defaults');

        Queuety::register('alias', AttributedHandler::class);
        $row = $this->job(Queuety::dispatch('alias')->id());
        $this->assertSame(['alias', 'attributed', '9'], [$row['handler'], $row['queue'], $row['max_attempts']], 'through a registered name, from the attribute');

        $this->assertSame('2', $this->job(Queuety::dispatch(AttributedStep::class)->id())['max_attempts']);
    }

    public function test_the_facade_needs_init(): void
    {
        Queuety::reset();
        $this->expectExceptionMessage('Queuety not initialized. Call Queuety::init() first.');
        Queuety::dispatch('x');
    }
}

final class ConfiguredHandler implements Handler
{
    public function handle(array $payload): void
    {
    }

    public function config(): array
    {
        return ['queue' => ' reports ', 'max_attempts' => '6', 'concurrency_group' => 'pdf', 'concurrency_limit' => 2, 'cost_units' => 4, 'backoff' => [10, 30]];
    }
}

#[QueuetyHandler(name: 'attributed', queue: 'attributed', max_attempts: 9)]
final class AttributedHandler implements Handler
{
    public function handle(array $payload): void
    {
    }

    public function config(): array
    {
        return [];
    }
}

#[QueuetyStep(max_attempts: 2)]
final class AttributedStep implements Step
{
    public function handle(array $state): array
    {
        return [];
    }

    public function config(): array
    {
        return [];
    }
}
