<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/metadata-app.php';

/**
 * End to end: `queuety work --workflows --php ...` reads PHP classes'
 * config() through its pool and applies it as the plugin does. The step it
 * enqueues after a PHP step carries the next class's queue, attempts,
 * group, cost and __queuety_runtime (the bytes the bridge's own dispatch
 * writes for the class); a plain handler's rate_limit [1, 60] lets one job
 * run and leaves the next pending, untouched.
 */
final class ClassMetadataDaemonTest extends DatabaseTestCase
{
    private const WAIT = 30.0;

    public function test_the_daemon_applies_php_class_settings(): void
    {
        $id = Queuety::workflow('meta')->then('MetaFirstStep')->then('MetaConfiguredStep')->dispatch(['n' => 0]);
        $first = Queuety::dispatch('MetaLimitedHandler', ['n' => 1])->id();
        $second = Queuety::dispatch('MetaLimitedHandler', ['n' => 2])->id();

        $daemon = $this->start_daemon();
        try {
            $done = $this->wait_until(self::WAIT, fn (): bool => Queuety::workflow_status($id)?->status === WorkflowStatus::Completed
                && $this->job_row($first)['status'] === 'completed');
            $this->assertTrue($done, "workflow and first job completed\ndaemon: " . $daemon->output());

            $step = $this->conn->pdo()->query("SELECT queue, max_attempts, concurrency_group, concurrency_limit, cost_units, payload, status FROM wp_queuety_jobs WHERE workflow_id = {$id} AND step_index = 1")->fetch(\PDO::FETCH_ASSOC);
            $this->assertSame(['queue' => 'llm', 'max_attempts' => '5', 'concurrency_group' => 'provider', 'concurrency_limit' => '2',
                'cost_units' => '3', 'payload' => '{"__queuety_runtime":{"max_attempts":5,"backoff":[5,30],"rate_limit":[10,60]}}', 'status' => 'completed'],
                array_map('strval', $step), 'the step job Go enqueued carries the class config()');
            $this->assertSame(['n' => 1, 'configured' => true], Queuety::workflow_status($id)?->state);

            // The same class dispatched by PHP gets the same settings.
            $php = Queuety::workflow('meta_php')->then('MetaConfiguredStep')->dispatch([]);
            $mine = $this->conn->pdo()->query("SELECT payload, queue, cost_units FROM wp_queuety_jobs WHERE workflow_id = {$php}")->fetch(\PDO::FETCH_ASSOC);
            $this->assertSame([$step['payload'], 'llm', '3'], [$mine['payload'], $mine['queue'], (string) $mine['cost_units']]);

            $row = $this->job_row($second);
        $this->assertSame(['pending', '0', null], [$row['status'], (string) $row['attempts'], $row['reserved_at']],
                'the second job of a handler limited to 1 a minute waits, untouched');
            $logs = (int) $this->conn->pdo()->query("SELECT COUNT(*) FROM wp_queuety_logs WHERE job_id = {$second}")->fetchColumn();
            $this->assertSame(0, $logs, 'a refused job writes no log row');
        } finally {
            $daemon->stop();
        }
    }

    private function start_daemon(): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/metadata-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '1',
            '--queue', 'default,llm', '--poll-interval', '20ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
    }

    /**
     * @return array<string, mixed>
     */
    private function job_row(int $id): array
    {
        return $this->conn->pdo()->query("SELECT status, attempts, reserved_at FROM wp_queuety_jobs WHERE id = {$id}")->fetch(\PDO::FETCH_ASSOC);
    }
}
