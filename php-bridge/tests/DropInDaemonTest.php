<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\RecordedCalls;
use Queuety\Tests\Support\QueuetyBinary;

require_once __DIR__ . '/fixtures/callback-classes.php';
require_once __DIR__ . '/fixtures/chain-classes.php';
require_once __DIR__ . '/fixtures/dropin-classes.php';

/**
 * The drop-in criterion in one run: code written against the plugin's API
 * dispatches a state machine, a batch with then/catch/finally, a chain of
 * Contracts\Job with a catch, a due interval schedule and a workflow of
 * step classes with config() settings; one plain `queuety work --php …`
 * drains them all, and every row ends as the plugin's own worker leaves
 * it in the recordings (state_machine, batch_then_catch_finally,
 * chain_with_catch, schedule_interval, step_class_metadata), times and
 * ids aside.
 */
final class DropInDaemonTest extends DatabaseTestCase
{
    use RecordedCalls;

    private const WAIT = 40.0;
    private const TIMES = ['available_at', 'reserved_at', 'completed_at', 'failed_at', 'created_at', 'finished_at', 'cancelled_at',
        'started_at', 'updated_at'];


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

    public function test_plain_work_drains_what_the_plugins_api_dispatched(): void
    {
        $machine = self::fixture('state_machine.json');
        $batch_fx = self::fixture('batch_then_catch_finally.json');
        $chain_fx = self::fixture('chain_with_catch.json');
        $schedule_fx = self::fixture('schedule_interval.json');
        $meta_fx = self::fixture('step_class_metadata.json');
        $pdo = $this->conn->pdo();

        // The bridge has no machine(): the machine is written as the
        // plugin's Queuety::machine(...)->dispatch() wrote it (its rows
        // after dispatch: the machine, its action job 1, machine_started
        // and action_enqueued).
        foreach (['state_machines' => 'wp_queuety_state_machines', 'jobs' => 'wp_queuety_jobs',
            'state_machine_events' => 'wp_queuety_state_machine_events'] as $key => $table) {
            $this->insert_rows($table, $machine['snapshots'][0][$key]);
        }
        // Jobs 2-4 (the recording's 1-3); named after the calls file, which
        // is where the callbacks report.
        $batch = Queuety::create_batch([
            ['handler' => 'noop', 'payload' => ['i' => 1]],
            ['handler' => 'flaky', 'payload' => ['why' => 'batch'], 'max_attempts' => 1],
            ['handler' => 'noop', 'payload' => ['i' => 3]],
        ])->name($this->calls)->then('BatchThenCallback')->catch('BatchCatchCallback')->finally('BatchFinallyCallback')->dispatch();
        // Jobs 5-7 (the recording's 1-3).
        $chain = Queuety::chain([new \FetchDataJob('https://example.com/feed?a=1&b=ü'), new \ProcessDataJob(), new \NotifyCompleteJob()])
            ->catch('DropInChainCatch')->dispatch();
        $schedule = Queuety::schedule('record', ['source' => 'interval'])->every('10 minutes')->id();
        $pdo->exec("UPDATE wp_queuety_schedules SET next_run = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE id = {$schedule}");
        $workflow = Queuety::workflow('meta')->then('IncStep')->then('ConfiguredStep', 'configured')->then('AttributeStep', 'attributed')
            ->dispatch(['n' => 0]);
        $this->assertSame([1, 1, 5, 1, 1], [(int) $machine['snapshots'][0]['state_machines'][0]['id'], $batch->id, $chain, $schedule, $workflow]);

        // Plain `queuety work --php`: workflows are on by default, the
        // schedules tick at start. ConfiguredStep's config() routes its
        // step to queue llm, which a worker only polls when told, as the
        // plugin's `wp queuety work --queue=default,llm`. One worker so the
        // batch's jobs finish one after another, as in the recording (its
        // catch sees one job still pending).
        $daemon = new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--php', $this->php_command(),
            '--queue', 'default,llm', '--concurrency', '1', '--php-workers', '1', '--poll-interval', '20ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
        try {
            $drained = $this->wait_until(self::WAIT, fn (): bool => $this->drained($workflow));
            $this->assertTrue($drained, "everything drained\ndaemon: " . $daemon->output());

            // The machine's events, sent as the recording sends them.
            try {
                $this->machine_event('{"approved":false}');
                $this->fail('a refused event exits non-zero');
            } catch (\RuntimeException $e) {
                $this->assertStringContainsString("State 'drafting' does not allow event 'submit'.", $e->getMessage());
            }
            $this->machine_event('{"approved":true,"by":"editor@example.com"}');
        } finally {
            $daemon->stop();
        }

        $this->assert_machine($machine);
        $this->assert_batch($batch_fx);
        $this->assert_chain($chain_fx);
        $this->assert_schedule($schedule_fx, $schedule);
        $this->assert_workflow($meta_fx, $workflow);
        // Nothing else: no stray job (one per link, step and due tick) and
        // no log row beyond the recordings'.
        $this->assertSame('11', $this->rows('SELECT COUNT(*) AS n FROM wp_queuety_jobs')[0]['n']);
        $logs = count($machine['snapshots'][3]['logs']) + count($batch_fx['snapshots'][count($batch_fx['snapshots']) - 1]['logs'])
            + count($chain_fx['snapshots'][count($chain_fx['snapshots']) - 1]['logs']) + count($schedule_fx['snapshots'][4]['logs'])
            + count($meta_fx['snapshots'][count($meta_fx['snapshots']) - 1]['logs']);
        $this->assertSame((string) $logs, $this->rows('SELECT COUNT(*) AS n FROM wp_queuety_logs')[0]['n']);
    }

    /**
     * @param array<string, mixed> $fx
     */
    private function assert_machine(array $fx): void
    {
        // The recording's last snapshot also has the event sent to the
        // completed machine; the one before it ends with the transition.
        $end = $fx['snapshots'][count($fx['snapshots']) - 2];
        $this->assertRows('wp_queuety_state_machines', $end['state_machines']);
        $this->assertRows('wp_queuety_jobs', $end['jobs'], [1]);
        $this->assertRows('wp_queuety_state_machine_events', $end['state_machine_events'], null, ['duration_ms', 'error']);
        $errors = $this->rows('SELECT error FROM wp_queuety_state_machine_events ORDER BY id');
        foreach ($end['state_machine_events'] as $i => $event) {
            $this->assertSame(self::error_without_trace($event['error']), self::error_without_trace($errors[$i]['error']),
                "machine event {$event['id']} error (message and class)");
        }
        $this->assert_logs($end['logs'], static fn (?int $id): ?int => $id, 'job_id = 1', 'the action job\'s log rows');
    }

    /**
     * @param array<string, mixed> $fx
     */
    private function assert_batch(array $fx): void
    {
        $end = $fx['snapshots'][count($fx['snapshots']) - 1];
        $shift = static fn (int $id): int => $id + 1;
        $batches = $end['batches'];
        $batches[0]['name'] = $this->calls;
        $batches[0]['failed_job_ids'] = json_encode(array_map($shift, json_decode($batches[0]['failed_job_ids'], true)));
        $this->assertRows('wp_queuety_batches', $batches);
        $this->assertRows('wp_queuety_jobs', $end['jobs'], [2, 3, 4]);
        $this->assert_logs($end['logs'], static fn (?int $id): ?int => $id === null ? null : $shift($id), 'job_id IN (2, 3, 4)', 'the batch jobs\' log rows');

        $want = [];
        foreach ($fx['calls'] as $call) {
            $call = array_diff_key($call, ['snapshot' => 0, 'after' => 0]);
            $call['batch']['name'] = $this->calls;
            $call['batch']['failed_job_ids'] = array_map($shift, $call['batch']['failed_job_ids']);
            $want[] = $call;
        }
        $this->assertSame($want, array_values(array_filter($this->reported(), static fn (array $c): bool => str_starts_with($c['call'], 'Batch'))),
            'catch once a job is buried, finally once all are done, no then');
    }

    /**
     * @param array<string, mixed> $fx
     */
    private function assert_chain(array $fx): void
    {
        $end = $fx['snapshots'][count($fx['snapshots']) - 1];
        $jobs = [];
        foreach ($end['jobs'] as $job) {
            $job['payload'] = str_replace('"ChainFailedHandler"', '"DropInChainCatch"', $job['payload']);
            $job['depends_on'] = $job['depends_on'] === null ? null : $job['depends_on'] + 4;
            $jobs[] = $job;
        }
        $this->assertRows('wp_queuety_jobs', $jobs, [5, 6, 7]);
        $this->assert_logs($end['logs'], static fn (?int $id): ?int => $id === null ? null : $id + 4, 'job_id IN (5, 6, 7)', 'the chain jobs\' log rows');
        $want = [];
        foreach ($fx['calls'] as $call) {
            $call = array_diff_key($call, ['snapshot' => 0, 'after' => 0]);
            if ($call['call'] === 'ChainFailedHandler::handle') {
                $call['call'] = 'DropInChainCatch::handle';
                $call['job_id'] += 4;
            }
            $want[] = $call;
        }
        $mine = array_values(array_filter($this->reported(), static fn (array $c): bool => preg_match('/^(FetchDataJob|ProcessDataJob|NotifyCompleteJob|DropInChainCatch)::/', $c['call']) === 1));
        $this->assertSame($want, $mine, 'handle(), failed() on the bury, then the chain catch; the link after stays pending');
    }

    /**
     * @param array<string, mixed> $fx
     */
    private function assert_schedule(array $fx, int $id): void
    {
        // Snapshot 2: one due tick, then the drain of its job (snapshot 4's
        // job 1 ran; the recording's second tick is not part of this run).
        $ticked = $fx['snapshots'][2]['schedules'];
        $this->assertRows('wp_queuety_schedules', $ticked);
        $row = $this->rows("SELECT TIMESTAMPDIFF(SECOND, last_run, next_run) AS gap, TIMESTAMPDIFF(SECOND, last_run, UTC_TIMESTAMP()) AS age FROM wp_queuety_schedules WHERE id = {$id}")[0];
        $this->assertSame('600', $row['gap'], 'next_run is last_run + 10 minutes');
        $this->assertLessThan(600, (int) $row['age'], 'last_run is this run\'s tick');
        $job = $this->rows("SELECT id FROM wp_queuety_jobs WHERE handler = 'record'");
        $this->assertCount(1, $job, 'one job per due tick');
        $want = $fx['snapshots'][4]['jobs'][0];
        $want['id'] = (int) $job[0]['id'];
        $this->assertRows('wp_queuety_jobs', [$want], [(int) $job[0]['id']]);
        $this->assert_logs($fx['snapshots'][4]['logs'], static fn (?int $id): int => (int) $job[0]['id'], "job_id = {$job[0]['id']}", 'the scheduled job\'s log rows');
        $this->assertSame([['call' => 'RecordHandler::handle', 'payload' => ['source' => 'interval']]],
            array_values(array_filter($this->reported(), static fn (array $c): bool => $c['call'] === 'RecordHandler::handle')));
    }

    /**
     * @param array<string, mixed> $fx
     */
    private function assert_workflow(array $fx, int $id): void
    {
        $end = $fx['snapshots'][count($fx['snapshots']) - 1];
        $this->assertRows('wp_queuety_workflows', $end['workflows']);
        $steps = $this->rows("SELECT id FROM wp_queuety_jobs WHERE workflow_id = {$id} ORDER BY step_index");
        $this->assertCount(3, $steps);
        $ids = array_map(static fn (array $r): int => (int) $r['id'], $steps);
        $map = static fn (?int $fixture_id): ?int => $fixture_id === null ? null : $ids[$fixture_id - 1];
        $want = [];
        foreach ($end['jobs'] as $job) {
            if ($job['handler'] === 'ConfiguredStep') {
                // The plugin writes config()'s backoff list [5, 30] as [] (a
                // plugin bug, docs/compat.md "PHP class settings"); the
                // daemon keeps the list, as the bridge's own dispatch does.
                $this->assertSame('{"__queuety_runtime":{"max_attempts":5,"backoff":[],"rate_limit":[10,60]}}', $job['payload']);
                $job['payload'] = '{"__queuety_runtime":{"max_attempts":5,"backoff":[5,30],"rate_limit":[10,60]}}';
            }
            $want[] = $job;
        }
        $this->assertRows('wp_queuety_jobs', $want, $ids);

        $this->assert_logs($end['logs'], $map, "workflow_id = {$id}", 'the workflow\'s log rows');

        $events = array_map(static fn (array $e): array => ['job_id' => $map($e['job_id'])] + $e, $end['workflow_events']);
        $this->assertRows('wp_queuety_workflow_events', $events, null, ['duration_ms', 'error']);
        $errors = $this->rows('SELECT error FROM wp_queuety_workflow_events ORDER BY id');
        foreach ($end['workflow_events'] as $i => $event) {
            $this->assertSame(self::error_without_trace($event['error']), self::error_without_trace($errors[$i]['error']), "workflow event {$event['id']} error");
        }
    }

    /**
     * The log rows $where selects against a recording's, but ids, times,
     * durations, memory peaks and traces; $map turns the recording's job
     * ids into this run's.
     *
     * @param list<array<string, mixed>> $logs
     */
    private function assert_logs(array $logs, callable $map, string $where, string $message): void
    {
        $columns = ['job_id', 'workflow_id', 'step_index', 'handler', 'queue', 'event', 'attempt', 'error_message', 'error_class', 'context'];
        $want = [];
        foreach ($logs as $l) {
            $row = [];
            foreach ($columns as $c) {
                $v = $c === 'job_id' ? $map($l['job_id']) : $l[$c];
                $row[$c] = $v === null ? null : (string) $v;
            }
            $want[] = $row;
        }
        $this->assertSame($want, $this->rows('SELECT ' . implode(', ', $columns) . " FROM wp_queuety_logs WHERE {$where} ORDER BY id"), $message);
    }

    /**
     * @return array<string, mixed>|null
     */
    private static function error_without_trace(?string $error): ?array
    {
        return $error === null ? null : array_diff_key(json_decode($error, true), ['trace' => 0]);
    }

    /**
     * Insert a recording's rows as they are, times set to now.
     *
     * @param list<array<string, mixed>> $rows
     */
    private function insert_rows(string $table, array $rows): void
    {
        foreach ($rows as $row) {
            $cols = array_keys($row);
            $values = array_map(fn (string $c): string => in_array($c, self::TIMES, true) && $row[$c] !== null ? 'UTC_TIMESTAMP()'
                : ($row[$c] === null ? 'NULL' : $this->conn->pdo()->quote((string) $row[$c])), $cols);
            $this->conn->pdo()->exec("INSERT INTO `{$table}` (`" . implode('`, `', $cols) . '`) VALUES (' . implode(', ', $values) . ')');
        }
    }

    /**
     * The rows of $table (those with the given ids, else all) against a
     * recording's: every column the same, times only present or absent,
     * $skip not compared.
     *
     * @param list<array<string, mixed>> $want
     * @param list<int>|null             $ids
     * @param list<string>               $skip
     */
    private function assertRows(string $table, array $want, ?array $ids = null, array $skip = []): void
    {
        $where = $ids === null ? '' : ' WHERE id IN (' . implode(',', $ids) . ')';
        $rows = $this->rows("SELECT * FROM `{$table}`{$where} ORDER BY id");
        $this->assertCount(count($want), $rows, $table);
        foreach ($want as $i => $expected) {
            foreach ($expected as $column => $value) {
                if ($column === 'id' || in_array($column, $skip, true)) {
                    continue;
                }
                $this->assertArrayHasKey($column, $rows[$i], "{$table} has {$column}");
                if (in_array($column, self::TIMES, true) || $column === 'last_run' || $column === 'next_run') {
                    $this->assertSame($value === null, $rows[$i][$column] === null, "{$table} {$rows[$i]['id']} {$column} presence");
                    continue;
                }
                $this->assertSame($value === null ? null : (string) $value, $rows[$i][$column], "{$table} {$rows[$i]['id']} {$column}");
            }
        }
    }

    /**
     * @return list<array<string, string|null>>
     */
    private function rows(string $sql): array
    {
        $pdo = new \PDO($this->conn->dsn(), 'root', '', [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION, \PDO::ATTR_STRINGIFY_FETCHES => true]);
        return $pdo->query($sql)->fetchAll(\PDO::FETCH_ASSOC);
    }

    /**
     * Whether every piece ran to its end: the machine waits for its event,
     * the batch and the chain ran their callbacks (the chain's last link
     * stays pending), the schedule's job ran, the workflow completed.
     */
    private function drained(int $workflow): bool
    {
        $pdo = $this->conn->pdo();
        // As the recording does, a step's retry is not waited for: its
        // available_at is moved to now.
        $pdo->exec("UPDATE wp_queuety_jobs SET available_at = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE workflow_id = {$workflow} AND status = 'pending' AND attempts > 0");
        return $this->machine_row()['status'] === 'waiting_event'
            && $this->job(4)['status'] === 'completed' && $this->count_calls('BatchFinallyCallback::handle') === 1
            && $this->job(6)['status'] === 'buried' && $this->count_calls('DropInChainCatch::handle') === 1
            && $this->count_calls('RecordHandler::handle') === 1
            && Queuety::workflow_status($workflow)?->status === WorkflowStatus::Completed
            && (int) $pdo->query("SELECT COUNT(*) FROM wp_queuety_jobs WHERE status IN ('pending', 'processing') AND id <> 7")->fetchColumn() === 0;
    }

    /** @return array<string, mixed> */
    private function machine_row(): array
    {
        return $this->conn->pdo()->query('SELECT status FROM wp_queuety_state_machines WHERE id = 1')->fetch(\PDO::FETCH_ASSOC);
    }

    /** @return list<array<mixed>> */

    private function count_calls(string $call): int
    {
        return count(array_filter($this->reported(), static fn (array $c): bool => $c['call'] === $call));
    }

    private function machine_event(string $payload): string
    {
        return QueuetyBinary::exec(['machine', 'event', '1', 'submit', $payload, '--dsn', $this->go_dsn(),
            '--php', $this->php_command(), '--php-workers', '1']);
    }

    private function php_command(): string
    {
        $root = dirname(__DIR__, 2);
        return sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/dropin-app.php', PHP_BINARY, $root, $root);
    }

    /**
     * @return array<string, mixed>
     */
    private static function fixture(string $name): array
    {
        return json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name), true, 512, JSON_THROW_ON_ERROR);
    }
}
