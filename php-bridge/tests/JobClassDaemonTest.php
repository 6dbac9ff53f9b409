<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\RecordedCalls;

require_once __DIR__ . '/fixtures/job-classes.php';

/**
 * End to end: PHP dispatches Contracts\Job objects (Queuety::dispatch(new
 * X), X::dispatch(), and rows with the chain's max_attempts 3), `queuety
 * work --php` runs them in the pool as the plugin's worker would, and PHP
 * reads the rows back: public properties hydrated, $tries and $backoff
 * honoured over the row, failed() called on the bury, middleware locks
 * written as in the job_middleware_locks recording.
 */
final class JobClassDaemonTest extends DatabaseTestCase
{
    use RecordedCalls;

    private const WAIT = 20.0;


    protected function setUp(): void
    {
        parent::setUp();
        $this->recordCalls();
    }

    protected function tearDown(): void
    {
        $this->forgetCalls();
        parent::tearDown();
    }

    public function test_job_objects_are_stored_hydrated_and_run(): void
    {
        $a = Queuety::dispatch(new \E2eFetchJob(1, \E2eColour::Blue, ['x' => '/y']))->id();
        $b = \E2eFetchJob::dispatch(2)->id();
        $row = $this->job($a);
        $this->assertSame('E2eFetchJob', $row['handler']);
        $this->assertSame('{"n":1,"colour":"blue","tags":{"x":"\/y"}}', $row['payload'], 'public properties but $tries, enums by value');
        $this->assertSame('5', $row['max_attempts'], '$tries on dispatch');

        $daemon = $this->start_daemon();
        try {
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($b) === 'completed' && $this->status($a) === 'completed'),
                'both completed; daemon: ' . $daemon->output());
        } finally {
            $daemon->stop();
        }
        // The pool runs both at once (several slots a process): order by n.
        $calls = $this->reported();
        usort($calls, static fn (array $x, array $y): int => $x['n'] <=> $y['n']);
        $this->assertSame([
            ['call' => 'handle', 'class' => 'E2eFetchJob', 'n' => 1, 'colour' => 'blue', 'tags' => ['x' => '/y']],
            ['call' => 'handle', 'class' => 'E2eFetchJob', 'n' => 2, 'colour' => 'red', 'tags' => []],
        ], $calls);
        $this->assertSame(['started', 'completed'], $this->events($a));
    }

    public function test_tries_and_backoff_of_the_class_beat_the_row_and_failed_runs_on_the_bury(): void
    {
        // As a chain writes them: max_attempts 3 whatever $tries says.
        $process = Queuety::dispatch_job('E2eProcessJob', ['n' => 2]);
        $backoff = Queuety::dispatch_job('E2eBackoffJob', ['n' => 3]);
        $this->assertSame('3', $this->job($process)['max_attempts']);

        $daemon = $this->start_daemon();
        try {
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($process) === 'buried' && $this->status($backoff) === 'pending'
                && $this->job($backoff)['attempts'] === '1'), 'daemon: ' . $daemon->output());
            $delay = (int) $this->conn->pdo()->query("SELECT TIMESTAMPDIFF(SECOND, NOW(), available_at) FROM wp_queuety_jobs WHERE id = {$backoff}")->fetchColumn();
            // Moved into the past for the second attempt: $tries 2 buries it.
            $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET available_at = NOW() - INTERVAL 1 SECOND WHERE id = {$backoff}");
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($backoff) === 'buried'), 'daemon: ' . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $this->assertSame('1', $this->job($process)['attempts'], '$tries 1: buried after one attempt');
        $this->assertSame('process failed (2)', $this->job($process)['error_message']);
        $this->assertSame(['started', 'buried'], $this->events($process));
        $this->assertGreaterThanOrEqual(5, $delay, '$backoff[0] = 7 s, not the daemon backoff');
        $this->assertLessThanOrEqual(7, $delay);
        $this->assertSame(['started', 'failed', 'retried', 'started', 'buried'], $this->events($backoff));
        $this->assertSame([
            ['call' => 'failed', 'class' => 'E2eProcessJob', 'n' => 2, 'error' => 'process failed (2)'],
            ['call' => 'failed', 'class' => 'E2eBackoffJob', 'n' => 3],
        ], $this->reported(), 'failed() once per job, on the bury only');
    }

    public function test_middleware_locks_as_the_plugin_writes_them(): void
    {
        $first = \E2eOverlapJob::dispatch(1)->id();
        $daemon = $this->start_daemon();
        try {
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($first) === 'completed'), 'daemon: ' . $daemon->output());
            // Another worker holds the lock: the plugin leaves such a job
            // processing for ever; here it completes without running.
            $this->conn->pdo()->exec("INSERT INTO wp_queuety_locks (lock_key, owner, acquired_at, expires_at) VALUES ('nightly-report', 'other-worker', NOW(), NOW() + INTERVAL 60 SECOND)");
            $second = \E2eOverlapJob::dispatch(2)->id();
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($second) === 'completed'), 'daemon: ' . $daemon->output());

            $t1 = \E2eThrottledJob::dispatch(3)->id();
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($t1) === 'pending' && $this->job($t1)['attempts'] === '1'), 'daemon: ' . $daemon->output());
            $t2 = \E2eThrottledJob::dispatch(4)->id();
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => $this->status($t2) === 'pending' && $this->job($t2)['attempts'] === '1'), 'daemon: ' . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $calls = $this->reported();
        $this->assertCount(1, $calls, 'job 2 never ran: ' . json_encode($calls));
        $this->assertSame('nightly-report', $calls[0]['locks'][0]['lock_key']);
        $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $calls[0]['locks'][0]['owner']);
        $this->assertSame(120, (int) $calls[0]['locks'][0]['ttl'], 'expires_at = acquired_at + release_after');
        $this->assertSame(['started', 'completed'], $this->events($second));

        $locks = $this->conn->pdo()->query('SELECT lock_key, owner, TIMESTAMPDIFF(SECOND, NOW(), expires_at) AS s FROM wp_queuety_locks ORDER BY lock_key')->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertSame(['nightly-report', 'throttle_exceptions:E2eThrottledJob'], array_column($locks, 'lock_key'), "job 1's lock released");
        $this->assertSame(['other-worker', '1'], array_column($locks, 'owner'), 'the throttle counter not raised by the throttled run');
        $this->assertGreaterThan(540, (int) $locks[1]['s'], 'the counter expires decay_minutes after the exception');
        $this->assertLessThanOrEqual(600, (int) $locks[1]['s']);
        $this->assertSame('upstream down (3)', $this->last_error($t1));
        $this->assertSame('Too many exceptions for E2eThrottledJob (1 in 10 minutes). Throttled.', $this->last_error($t2));
    }

    private function start_daemon(): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/job-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--php', $php, '--php-workers', '1', '--poll-interval', '20ms'],
            ['QUEUETY_DSN' => $this->go_dsn(), 'QUEUETY_TEST_DATABASE' => $this->database, 'QUEUETY_TEST_CALLS' => $this->calls]);
    }

    private function status(int $id): string
    {
        return (string) $this->job($id)['status'];
    }

    /** @return list<string> */
    private function events(int $id): array
    {
        return $this->conn->pdo()->query("SELECT event FROM wp_queuety_logs WHERE job_id = {$id} ORDER BY id")->fetchAll(\PDO::FETCH_COLUMN);
    }

    private function last_error(int $id): ?string
    {
        $v = $this->conn->pdo()->query("SELECT error_message FROM wp_queuety_logs WHERE job_id = {$id} AND error_message IS NOT NULL ORDER BY id DESC LIMIT 1")->fetchColumn();
        return $v === false ? null : $v;
    }

    /** @return list<array<mixed>> */
}
