<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/chain-classes.php';

/**
 * The chain_with_catch and batch_then_catch_finally recordings: the rows
 * the bridge's chain() and create_batch() write, and the chain's jobs run
 * by `queuety work --php` ending as the plugin's worker left them (the
 * $tries 1 link buried after one attempt with failed() called, the link
 * after it pending). The chain's catch call is the daemon's chain
 * support's, not the pool's.
 */
final class FixtureChainBatchTest extends DatabaseTestCase
{
    private const TIMES = ['available_at', 'reserved_at', 'completed_at', 'failed_at', 'created_at', 'finished_at', 'cancelled_at'];

    private string $calls;

    protected function setUp(): void
    {
        parent::setUp();
        $this->calls = tempnam(sys_get_temp_dir(), 'qtcalls');
    }

    protected function tearDown(): void
    {
        @unlink($this->calls);
        parent::tearDown();
    }

    public function test_chain_rows_and_run_match_the_plugin(): void
    {
        $fixture = self::fixture('chain_with_catch.json');
        $first = Queuety::chain([new \FetchDataJob('https://example.com/feed?a=1&b=ü'), new \ProcessDataJob(), new \NotifyCompleteJob()])
            ->catch('ChainFailedHandler')->dispatch();
        $this->assertSame(1, $first);
        $this->assertRows('wp_queuety_jobs', $fixture['snapshots'][0]['jobs']);

        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/chain-app.php', PHP_BINARY, $root, $root);
        $daemon = new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--php', $php, '--php-workers', '1', '--poll-interval', '20ms'],
            ['QUEUETY_DSN' => $this->go_dsn(), 'QUEUETY_TEST_DATABASE' => $this->database, 'QUEUETY_TEST_CALLS' => $this->calls]);
        try {
            $this->assertTrue($this->wait_until(20.0, fn (): bool => $this->job(2)['status'] === 'buried'), 'daemon: ' . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $this->assertRows('wp_queuety_jobs', $fixture['snapshots'][2]['jobs']);
        $events = $this->conn->pdo()->query('SELECT job_id, event, attempt, error_message, error_class FROM wp_queuety_logs ORDER BY id')->fetchAll(\PDO::FETCH_ASSOC);
        $want = array_map(static fn (array $l): array => array_intersect_key($l, array_flip(['job_id', 'event', 'attempt', 'error_message', 'error_class'])), $fixture['snapshots'][2]['logs']);
        $this->assertEquals($want, $events, 'started/completed, started/buried after one attempt ($tries 1 over max_attempts 3)');
        $calls = array_values(array_map(static fn (string $l): array => json_decode($l, true), array_filter(explode("\n", (string) file_get_contents($this->calls)))));
        $plugin = array_values(array_filter($fixture['calls'], static fn (array $c): bool => !str_starts_with($c['call'], 'ChainFailedHandler')));
        $this->assertSame(array_map(static fn (array $c): array => array_diff_key($c, ['snapshot' => 0, 'after' => 0]), $plugin), $calls,
            'handle() hydrated from the payload, failed() on the bury');
    }

    public function test_batch_rows_match_the_plugin(): void
    {
        $fixture = self::fixture('batch_then_catch_finally.json');
        $batch = Queuety::create_batch([
            ['handler' => 'noop', 'payload' => ['i' => 1]],
            ['handler' => 'flaky', 'payload' => ['why' => 'batch'], 'max_attempts' => 1],
            ['handler' => 'noop', 'payload' => ['i' => 3]],
        ])->name('import')->then('BatchThenCallback')->catch('BatchCatchCallback')->finally('BatchFinallyCallback')->dispatch();
        $this->assertSame(1, $batch->id);
        $this->assertSame(3, $batch->pending_jobs);
        $this->assertSame(0, $batch->progress());
        $this->assertRows('wp_queuety_batches', $fixture['snapshots'][0]['batches']);
        $this->assertRows('wp_queuety_jobs', $fixture['snapshots'][0]['jobs']);
    }

    /**
     * @param list<array<string, mixed>> $want
     */
    private function assertRows(string $table, array $want): void
    {
        $pdo = new \PDO($this->conn->dsn(), 'root', '', [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION, \PDO::ATTR_STRINGIFY_FETCHES => true]);
        $rows = $pdo->query("SELECT * FROM `{$table}` ORDER BY id")->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertCount(count($want), $rows, $table);
        foreach ($want as $i => $expected) {
            foreach ($expected as $column => $value) {
                if (in_array($column, self::TIMES, true)) {
                    $this->assertSame($value === null, $rows[$i][$column] === null, "{$table} {$expected['id']} {$column} presence");
                    continue;
                }
                $this->assertSame($value === null ? null : (string) $value, $rows[$i][$column], "{$table} {$expected['id']} {$column}");
            }
        }
    }

    /**
     * @return array<string, mixed>
     */
    private static function fixture(string $name): array
    {
        return json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name), true, 512, JSON_THROW_ON_ERROR);
    }
}
