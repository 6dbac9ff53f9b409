<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\RecordedCalls;
use Queuety\Tests\Support\QueuetyBinary;

/**
 * End to end with the plugin's rows: a batch, a chain with a catch and a
 * state machine, written as the plugin's create_batch, chain and machine
 * write them, are run by `queuety work --php …`, their callback, action
 * and guard classes in the pool (fixtures/callback-classes.php); `queuety
 * machine event` sends the machine its events. PHP reads the rows back.
 */
final class BatchMachineDaemonTest extends DatabaseTestCase
{
    use RecordedCalls;

    private const WAIT = 20.0;


    protected function setUp(): void
    {
        parent::setUp();
        $this->recordCalls(false);
    }

    protected function tearDown(): void
    {
        $this->forgetCalls();
        parent::tearDown();
    }

    public function test_daemon_runs_a_batch_and_its_php_callbacks(): void
    {
        $pdo = $this->conn->pdo();
        $pdo->prepare("INSERT INTO wp_queuety_batches (name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options) VALUES (?, 3, 3, 0, '[]', ?)")
            ->execute([$this->calls, '{"then":"BatchThenCallback","catch":"BatchCatchCallback","finally":"BatchFinallyCallback"}']);
        $batch = (int) $pdo->lastInsertId();
        foreach ([['noop', '{"i":1}', 3], ['flaky', '{"why":"batch"}', 1], ['noop', '{"i":3}', 3]] as [$handler, $payload, $max]) {
            $pdo->prepare("INSERT INTO wp_queuety_jobs (queue, handler, payload, priority, status, max_attempts, available_at, batch_id) VALUES ('default', ?, ?, 0, 'pending', ?, UTC_TIMESTAMP(), ?)")
                ->execute([$handler, $payload, $max, $batch]);
        }

        $daemon = $this->start_daemon();
        try {
            $done = $this->wait_until(self::WAIT, fn (): bool => count($this->reported()) === 2);
            $this->assertTrue($done, "catch and finally called\ndaemon: " . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $row = $pdo->query("SELECT pending_jobs, failed_jobs, failed_job_ids, finished_at FROM wp_queuety_batches WHERE id = {$batch}")->fetch(\PDO::FETCH_ASSOC);
        $this->assertSame(['0', '1', '[2]'], [(string) $row['pending_jobs'], (string) $row['failed_jobs'], $row['failed_job_ids']]);
        $this->assertNotNull($row['finished_at']);
        $calls = $this->reported();
        $this->assertSame(['BatchCatchCallback::handle', 'BatchFinallyCallback::handle'], array_column($calls, 'call'), 'then does not fire: a job failed');
        $this->assertSame([2], $calls[0]['batch']['failed_job_ids']);
        $this->assertTrue($calls[1]['batch']['finished']);
        $this->assertSame('buried', $this->job(2)['status']);
    }

    public function test_daemon_calls_a_chains_catch_when_a_link_is_buried(): void
    {
        $pdo = $this->conn->pdo();
        $insert = $pdo->prepare("INSERT INTO wp_queuety_jobs (queue, handler, payload, priority, status, max_attempts, available_at, depends_on) VALUES ('default', ?, ?, 0, 'pending', ?, UTC_TIMESTAMP(), ?)");
        $insert->execute(['noop', json_encode(['step' => 1, '__chain_catch' => 'ChainFailedHandler']), 3, null]);
        $insert->execute(['flaky', json_encode(['why' => 'chain', 'marker' => $this->calls, '__chain_catch' => 'ChainFailedHandler']), 1, 1]);
        $insert->execute(['noop', json_encode(['step' => 3, '__chain_catch' => 'ChainFailedHandler']), 3, 2]);

        $daemon = $this->start_daemon();
        try {
            $done = $this->wait_until(self::WAIT, fn (): bool => count($this->reported()) === 1);
            $this->assertTrue($done, "catch called\ndaemon: " . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $this->assertSame([['call' => 'ChainFailedHandler::handle', 'job_id' => 2, 'handler' => 'flaky', 'attempts' => 1,
            'message' => 'boom: chain', 'class' => 'RuntimeException']], $this->reported());
        $this->assertSame('completed', $this->job(1)['status']);
        $this->assertSame('buried', $this->job(2)['status']);
        $this->assertSame('pending', $this->job(3)['status'], 'the links after a buried one stay pending, as in the plugin');
    }

    public function test_daemon_runs_a_machines_action_and_the_cli_sends_its_events(): void
    {
        $pdo = $this->conn->pdo();
        $definition = '{"name":"review","initial_state":"drafting","states":{"drafting":{"name":"drafting","action":{"class":"DraftAction","payload":[]},"action_class":"DraftAction","terminal_status":null,"transitions":[{"event":"submit","target_state":"published","guard":{"class":"PublishGuard","payload":[]},"guard_class":"PublishGuard","name":"submit"}]},"published":{"name":"published","action":null,"action_class":null,"terminal_status":"completed","transitions":[]}},"queue":"default","priority":0,"max_attempts":3,"definition_version":"review.v1","definition_hash":null}';
        $pdo->prepare("INSERT INTO wp_queuety_state_machines (name, status, current_state, state, definition, definition_version) VALUES ('review', 'running', 'drafting', ?, ?, 'review.v1')")
            ->execute(['{"doc_id":7,"title":"\u00dcn\u00ef\/draft"}', $definition]);
        $pdo->exec("INSERT INTO wp_queuety_jobs (queue, handler, payload, priority, status, max_attempts, available_at) VALUES ('default', '__queuety_state_machine_action', '{\"machine_id\":1,\"state_name\":\"drafting\",\"event_name\":null,\"event_payload\":[]}', 0, 'pending', 3, UTC_TIMESTAMP())");

        $daemon = $this->start_daemon();
        try {
            $done = $this->wait_until(self::WAIT, fn (): bool => $this->machine()['status'] === 'waiting_event');
            $this->assertTrue($done, "the action ran\ndaemon: " . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $this->assertSame('{"doc_id":7,"title":"\u00dcn\u00ef\/draft","draft":"v1 of \u00dcn\u00ef\/draft"}', $this->machine()['state']);

        try {
            $this->machine_event('{"approved":false}');
            $this->fail('a refused event exits non-zero');
        } catch (\RuntimeException $e) {
            $this->assertStringContainsString("State 'drafting' does not allow event 'submit'.", $e->getMessage());
        }
        $this->assertSame('waiting_event', $this->machine()['status']);
        $out = $this->machine_event('{"approved":true,"by":"editor@example.com"}', '--json');
        $this->assertStringContainsString('"status": "completed"', $out, 'the machine as --json prints it');
        $m = $this->machine();
        $this->assertSame(['completed', 'published'], [$m['status'], $m['current_state']]);
        $this->assertSame('{"doc_id":7,"title":"\u00dcn\u00ef\/draft","draft":"v1 of \u00dcn\u00ef\/draft","approved":true,"by":"editor@example.com"}', $m['state']);
        $events = $pdo->query('SELECT event FROM wp_queuety_state_machine_events ORDER BY id')->fetchAll(\PDO::FETCH_COLUMN);
        $this->assertSame(['action_started', 'action_completed', 'machine_waiting', 'event_received', 'guard_started', 'guard_completed',
            'event_rejected', 'event_received', 'guard_started', 'guard_completed', 'transitioned', 'machine_completed'], $events);
    }

    /** @return list<array<mixed>> */

    /** @return array<string, mixed> */
    private function machine(): array
    {
        return $this->conn->pdo()->query('SELECT status, current_state, state FROM wp_queuety_state_machines WHERE id = 1')->fetch(\PDO::FETCH_ASSOC);
    }

    private function machine_event(string $payload, string ...$flags): string
    {
        return QueuetyBinary::exec(array_merge(['machine', 'event', '1', 'submit', $payload, '--dsn', $this->go_dsn(),
            '--php', $this->php_command(), '--php-workers', '1'], $flags));
    }

    private function php_command(): string
    {
        $root = dirname(__DIR__, 2);
        return sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/callback-app.php', PHP_BINARY, $root, $root);
    }

    private function start_daemon(): DaemonProcess
    {
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--php', $this->php_command(), '--php-workers', '1',
            '--concurrency', '1', '--poll-interval', '20ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
    }
}
