<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Batch;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Queuety::batch_manager()->cancel() and ->prune() as the plugin's
 * BatchManager, so handler code that calls them works without the plugin.
 */
final class BatchManagerTest extends DatabaseTestCase
{
    public function test_cancel_sets_the_times_once_and_runs_finally_once(): void
    {
        CancelFinally::$seen = [];
        $batch = Queuety::create_batch([['handler' => 'a'], ['handler' => 'b']])->name('import')->finally(CancelFinally::class)->dispatch();
        Queuety::batch_manager()->cancel($batch->id);
        Queuety::batch_manager()->cancel($batch->id);

        $found = Queuety::find_batch($batch->id);
        $this->assertTrue($found?->cancelled());
        $this->assertNotNull($found?->finished_at, 'finished_at set with cancelled_at');
        $this->assertSame([[$batch->id, 'import', true]], CancelFinally::$seen, 'finally ran once, with the cancelled batch');
        $this->assertSame(['pending', 'pending'], $this->conn->pdo()->query('SELECT status FROM wp_queuety_jobs ORDER BY id')->fetchAll(\PDO::FETCH_COLUMN),
            'the jobs are left to the worker, as the plugin leaves them');

        $throws = Queuety::create_batch([['handler' => 'c']])->finally(ThrowingFinally::class)->dispatch();
        Queuety::batch_manager()->cancel($throws->id);
        $this->assertTrue(Queuety::find_batch($throws->id)?->cancelled(), "a failing finally is swallowed, as the plugin's");
    }

    public function test_prune_deletes_finished_batches_older_than_the_days(): void
    {
        $m = Queuety::batch_manager();
        $old = $m->create(1, 'old');
        $recent = $m->create(1, 'recent');
        $open = $m->create(1, 'open');
        $this->conn->pdo()->exec("UPDATE wp_queuety_batches SET finished_at = UTC_TIMESTAMP() - INTERVAL 10 DAY WHERE id = {$old}");
        $this->conn->pdo()->exec("UPDATE wp_queuety_batches SET finished_at = UTC_TIMESTAMP() - INTERVAL 2 DAY WHERE id = {$recent}");
        $this->conn->pdo()->exec("UPDATE wp_queuety_batches SET created_at = UTC_TIMESTAMP() - INTERVAL 30 DAY WHERE id = {$open}");

        $this->assertSame(1, $m->prune(7));
        $this->assertNull($m->find($old));
        $this->assertNotNull($m->find($recent));
        $this->assertNotNull($m->find($open), 'an unfinished batch is kept however old');
        $this->assertSame(0, $m->prune(7));
    }
}

final class CancelFinally
{
    /** @var list<array{int, ?string, bool}> */
    public static array $seen = [];

    public function handle(Batch $batch): void
    {
        self::$seen[] = [$batch->id, $batch->name, $batch->cancelled()];
    }
}

final class ThrowingFinally
{
    public function handle(Batch $batch): void
    {
        throw new \RuntimeException('finally failed');
    }
}
