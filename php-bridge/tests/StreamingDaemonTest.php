<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/stream-classes.php';

/**
 * End to end, the streaming_step_artifacts recording: PHP dispatches a
 * workflow with a StreamingStep cut after two chunks and a step storing
 * artifacts; `queuety work --workflows --php` runs it; PHP reads back the
 * chunks (kept on the failure, resumed, deleted on completion), the job's
 * heartbeat_data, the artifacts and the step_completed events' chunks and
 * artifacts columns.
 */
final class StreamingDaemonTest extends DatabaseTestCase
{
    private const WAIT = 20.0;

    public function test_streaming_step_chunks_and_artifacts(): void
    {
        $id = Queuety::workflow('stream_and_store')->then('StreamIncStep')->then('StreamTextStep', 'stream')->then('StoreArtifactStep', 'store')
            ->dispatch(['n' => 0, 'topic' => 'pricing/ü']);
        $daemon = $this->start_daemon();
        try {
            $stream = fn (): array => $this->conn->pdo()->query("SELECT id, status, attempts, max_attempts, heartbeat_data FROM wp_queuety_jobs WHERE workflow_id = {$id} AND step_index = 1")->fetch(\PDO::FETCH_ASSOC) ?: [];
            $this->assertTrue($this->wait_until(self::WAIT, fn (): bool => ($stream()['status'] ?? '') === 'pending' && ($stream()['attempts'] ?? 0) == 1),
                'first attempt failed; daemon: ' . $daemon->output());
            $job = $stream();
            $this->assertSame('{"streaming_chunks":2}', $job['heartbeat_data'], json_encode($job) . ' daemon: ' . $daemon->output());
            $this->assertSame([[0, 'Hello'], [1, ' wörld']], $this->chunks((int) $job['id']), 'kept on the failure');

            $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET available_at = NOW() WHERE id = {$job['id']}");
            $this->assertTrue($this->wait_until(self::WAIT, static fn (): bool => Queuety::workflow_status($id)?->status === WorkflowStatus::Completed),
                'completed; daemon: ' . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $job = $stream();
        $this->assertSame('{"streaming_chunks":3}', $job['heartbeat_data'], 'stays on the row');
        $this->assertSame([], $this->chunks((int) $job['id']), 'deleted on completion');
        $state = Queuety::workflow_status($id)?->state;
        $this->assertSame('Hello wörld/done', $state['text']);
        $this->assertSame(3, $state['chunk_count']);
        $this->assertSame(2, $state['stored']);

        $events = $this->conn->pdo()->query("SELECT step_index, output, context, artifacts, chunks FROM wp_queuety_workflow_events WHERE workflow_id = {$id} AND event = 'step_completed' ORDER BY id")->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertCount(3, $events);
        $this->assertSame(
            '[{"job_id":' . $job['id'] . ',"workflow_id":' . $id . ',"step_index":1,"chunk_index":0,"content":"Hello"},'
            . '{"job_id":' . $job['id'] . ',"workflow_id":' . $id . ',"step_index":1,"chunk_index":1,"content":" w\u00f6rld"},'
            . '{"job_id":' . $job['id'] . ',"workflow_id":' . $id . ',"step_index":1,"chunk_index":2,"content":"\/done"}]',
            $events[1]['chunks'],
            "the plugin's entries, with their values (the plugin writes chunk_index and content null)",
        );
        $this->assertSame('{"chunks_seen":3}', $events[1]['context'], 'trace_context()');
        $this->assertNull($events[1]['artifacts']);
        $this->assertSame('{"text":"Hello w\u00f6rld\/done","chunk_count":3}', $events[1]['output'], '_queuety_trace is not part of the output');
        $this->assertSame('[{"key":"draft","kind":"json","step_index":2,"metadata":{"source":"planner"}},{"key":"notes","kind":"markdown","step_index":2,"metadata":[]}]', $events[2]['artifacts']);
        $this->assertNull($events[2]['chunks']);

        $artifacts = $this->conn->pdo()->query("SELECT id, artifact_key, kind, content, metadata, step_index, created_at FROM wp_queuety_artifacts WHERE workflow_id = {$id} ORDER BY id")->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertSame(['draft', 'json', '{"title":"Brief/\u00fc","score":1,"tags":[]}', '{"source":"planner"}', 2],
            [$artifacts[0]['artifact_key'], $artifacts[0]['kind'], $artifacts[0]['content'], $artifacts[0]['metadata'], (int) $artifacts[0]['step_index']]);
        $this->assertSame(["# Notes\n\nsee a/b ü", '[]'], [$artifacts[1]['content'], $artifacts[1]['metadata']]);

        // The recording's rows after job 3 (ids and times aside; the class
        // names are the test's own, so no state hash or handler column).
        $fixture = json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/testdata/queuety-plugin/streaming_step_artifacts.json'), true, 512, JSON_THROW_ON_ERROR);
        $want = $fixture['snapshots'][5];
        $got = $this->conn->pdo()->query("SELECT event, step_index, step_name, step_type, attempt, input, output, state_before, state_after, context, artifacts, chunks FROM wp_queuety_workflow_events WHERE workflow_id = {$id} ORDER BY id")->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertCount(count($want['workflow_events']), $got);
        foreach ($want['workflow_events'] as $i => $w) {
            foreach (['event', 'step_index', 'step_name', 'step_type', 'attempt', 'input', 'output', 'state_before', 'state_after', 'context', 'artifacts', 'chunks'] as $col) {
                $expected = $w[$col] === null ? null : (string) $w[$col];
                if ($col === 'chunks' && $expected !== null) {
                    // The plugin bug: the same entries, with their values.
                    $expected = str_replace('"job_id":2,"workflow_id":1', '"job_id":' . $job['id'] . ',"workflow_id":' . $id, $events[1]['chunks']);
                }
                if ($col === 'context' && $w['event'] === 'step_completed' && $w['step_index'] === 1) {
                    $expected = '{"chunks_seen":3}'; // this test's trace_context() call
                }
                $this->assertSame($expected, $got[$i][$col] === null ? null : (string) $got[$i][$col], "event {$w['id']} ({$w['event']}) {$col}");
            }
        }
        foreach ($want['artifacts'] as $i => $w) {
            foreach (['artifact_key', 'kind', 'content', 'metadata', 'step_index'] as $col) {
                $this->assertSame((string) $w[$col], (string) $artifacts[$i][$col], "artifact {$w['artifact_key']} {$col}");
            }
        }
        $recorded = array_values(array_filter($want['jobs'], static fn (array $j): bool => $j['step_index'] === 1))[0];
        $this->assertSame([$recorded['status'], (string) $recorded['attempts'], $recorded['heartbeat_data']], [$job['status'], (string) $job['attempts'], $job['heartbeat_data']]);

        // From outside the workflow: an upsert keeping id and created_at.
        Queuety::put_artifact($id, 'draft', ['title' => 'v2'], 'json', metadata: ['reviewed_by' => 'editor@example.com']);
        $after = Queuety::workflow_artifact($id, 'draft');
        $this->assertSame((int) $artifacts[0]['id'], $after['id']);
        $this->assertSame($artifacts[0]['created_at'], $after['created_at']);
        $this->assertSame(['title' => 'v2'], $after['content']);
        $this->assertNull($after['step_index']);
        $this->assertSame(['draft', 'notes'], array_column(Queuety::workflow_artifacts($id), 'key'));
    }

    private function start_daemon(): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/stream-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '1', '--poll-interval', '20ms'],
            ['QUEUETY_DSN' => $this->go_dsn(), 'QUEUETY_TEST_DATABASE' => $this->database]);
    }

    /** @return list<array{0: int, 1: string}> */
    private function chunks(int $job_id): array
    {
        $rows = $this->conn->pdo()->query("SELECT chunk_index, content FROM wp_queuety_chunks WHERE job_id = {$job_id} ORDER BY chunk_index")->fetchAll(\PDO::FETCH_NUM);
        return array_map(static fn (array $r): array => [(int) $r[0], $r[1]], $rows);
    }
}
