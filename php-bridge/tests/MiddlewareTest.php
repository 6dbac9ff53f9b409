<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Exceptions\RateLimitExceededException;
use Queuety\Middleware\RateLimited;
use Queuety\Middleware\UniqueJob;
use Queuety\Middleware\WithoutOverlapping;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/job-classes.php';

/**
 * The bridge's job middleware on the plugin's tables: the locks rows they
 * hold while the job runs, what they do when a lock is held or expired,
 * and the rate count from `completed` log rows.
 */
final class MiddlewareTest extends DatabaseTestCase
{
    public function test_unique_job_holds_its_lock_only_while_running(): void
    {
        $job = new \E2eFetchJob(1);
        $seen = null;
        (new UniqueJob())->handle($job, function () use (&$seen): void {
            $seen = $this->locks();
        });
        $this->assertSame(['E2eFetchJob'], array_column($seen, 'lock_key'), 'default key: the class');
        $this->assertNull($seen[0]['expires_at'], 'no expiry');
        $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $seen[0]['owner']);
        $this->assertSame([], $this->locks(), 'released');

        $this->conn->pdo()->exec("INSERT INTO wp_queuety_locks (lock_key, owner, acquired_at) VALUES ('sync', 'other', NOW())");
        $ran = false;
        (new UniqueJob('sync'))->handle($job, static function () use (&$ran): void {
            $ran = true;
        });
        $this->assertFalse($ran, 'held by another job: not run');
        $this->assertSame(['other'], array_column($this->locks(), 'owner'), "the other job's lock is left alone");
    }

    public function test_without_overlapping_clears_an_expired_lock_and_releases_on_failure(): void
    {
        $this->conn->pdo()->exec("INSERT INTO wp_queuety_locks (lock_key, owner, acquired_at, expires_at) VALUES ('report', 'dead-worker', NOW() - INTERVAL 10 MINUTE, NOW() - INTERVAL 1 MINUTE)");
        $ran = false;
        try {
            (new WithoutOverlapping('report', 60))->handle(new \E2eFetchJob(1), static function () use (&$ran): void {
                $ran = true;
                throw new \RuntimeException('boom');
            });
            $this->fail('the exception goes through');
        } catch (\RuntimeException $e) {
            $this->assertSame('boom', $e->getMessage());
        }
        $this->assertTrue($ran, 'an expired lock does not block');
        $this->assertSame([], $this->locks(), 'released when the job throws');
    }

    public function test_rate_limited_counts_completed_log_rows_in_the_window(): void
    {
        $insert = fn (string $when): int|false => $this->conn->pdo()->exec("INSERT INTO wp_queuety_logs (job_id, handler, queue, event, created_at) VALUES (1, 'E2eFetchJob', 'default', 'completed', {$when})");
        $insert('UTC_TIMESTAMP()');
        $insert('UTC_TIMESTAMP() - INTERVAL 1 HOUR'); // outside the window
        $runs = 0;
        $mw = new RateLimited(2, 60);
        $mw->handle(new \E2eFetchJob(1), static function () use (&$runs): void {
            $runs++;
        });
        $this->assertSame(1, $runs);
        $insert('UTC_TIMESTAMP()');
        $this->expectException(RateLimitExceededException::class);
        $this->expectExceptionMessage("Rate limit exceeded for 'E2eFetchJob': max 2 executions per 60 seconds.");
        $mw->handle(new \E2eFetchJob(1), static function () use (&$runs): void {
            $runs++;
        });
    }

    /** @return list<array<string, mixed>> */
    private function locks(): array
    {
        return $this->conn->pdo()->query('SELECT lock_key, owner, expires_at FROM wp_queuety_locks ORDER BY lock_key')->fetchAll(\PDO::FETCH_ASSOC);
    }
}
