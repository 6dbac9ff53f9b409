<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\ForEachMode;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\WorkerSessionOptions;

/**
 * Session-bound steps and jobs (seed 000): WorkerSessionOptions validates
 * with the library's messages, bound steps carry the snapshot, and their
 * jobs carry the session id and the normalized options in the
 * session_id / worker_session columns the daemon admits them by.
 */
final class WorkerSessionTest extends DatabaseTestCase
{
    protected const SHARE_DATABASE = true;

    private const GPU = '{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4"],"lease_seconds":120,"ttl_seconds":600,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}';

    public function test_options_throw_the_librarys_messages(): void
    {
        $cases = [
            'Worker session session id must be a non-empty string.' => static fn () => new WorkerSessionOptions(sessionId: ' '),
            'Worker session connection must be a non-empty string.' => static fn () => new WorkerSessionOptions(connection: ''),
            'Worker session queue must be a non-empty string.' => static fn () => new WorkerSessionOptions(queue: "\t"),
            'Worker session requirement at index 1 must be a non-empty string.' => static fn () => new WorkerSessionOptions(requirements: ['a', ' ']),
            'Worker session requirement at index 0 must be a non-empty string.' => static fn () => new WorkerSessionOptions(requirements: [7]),
            'Worker session leaseSeconds must be a positive integer.' => static fn () => new WorkerSessionOptions(leaseSeconds: 0),
            'Worker session ttlSeconds must be a positive integer.' => static fn () => new WorkerSessionOptions(ttlSeconds: -1),
            'Worker session maxConcurrentActivities must be a positive integer.' => static fn () => new WorkerSessionOptions(maxConcurrentActivities: 0),
            'Worker session id must be set before snapshotting activity options.' => static fn () => (new WorkerSessionOptions())->toSnapshot(),
            'Worker session session id must be a non-empty string.' . ' (builder)' => static fn () => Queuety::workflow('w')->worker_session('  '),
        ];
        foreach ($cases as $message => $call) {
            try {
                $call();
                $this->fail("no exception for: {$message}");
            } catch (\InvalidArgumentException $e) {
                $this->assertSame(str_replace(' (builder)', '', $message), $e->getMessage());
            }
        }
    }

    public function test_snapshot_is_the_librarys(): void
    {
        $o = (new WorkerSessionOptions(queue: ' gpu ', requirements: [' a', 'a ', 'b'], leaseSeconds: 5))->withSessionId(' s ');
        $this->assertSame('{"session_id":"s","connection":null,"queue":"gpu","requirements":["a","b"],"lease_seconds":5,"ttl_seconds":null,"max_concurrent_activities":null,"create_if_missing":true,"allow_reacquire_after_failure":true}',
            json_encode($o->toSnapshot(), JSON_THROW_ON_ERROR));
        $this->assertSame('{"session_id":"s","connection":null,"queue":"gpu","requirements":["a","b"],"lease_seconds":5,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}',
            json_encode($o->toNormalizedSnapshot('ignored'), JSON_THROW_ON_ERROR));
        $this->assertSame($o->toSnapshot(), WorkerSessionOptions::fromSnapshot($o->toSnapshot())->toSnapshot(), 'a snapshot reads back');
    }

    public function test_from_snapshot_reports_every_field_with_the_normalizers_messages(): void
    {
        $cases = [
            'Workflow task command field [worker_session] must be an object when provided.' => 'gpu',
            'worker_session.session_id: Worker session commands require a non-empty session_id.' => ['queue' => 'q'],
            'worker_session.session_id: Worker session commands require a non-empty session_id. ' => ['session_id' => 7],
            'worker_session.connection: Worker session field [connection] must be a non-empty string when provided. '
            . 'worker_session.queue: Worker session field [queue] must be a non-empty string when provided. '
            . 'worker_session.lease_seconds: Worker session field [lease_seconds] must be a positive integer when provided. '
            . 'worker_session.ttl_seconds: Worker session field [ttl_seconds] must be a positive integer when provided. '
            . 'worker_session.max_concurrent_activities: Worker session field [max_concurrent_activities] must be a positive integer when provided. '
            . 'worker_session.create_if_missing: Worker session field [create_if_missing] must be boolean when provided. '
            . 'worker_session.allow_reacquire_after_failure: Worker session field [allow_reacquire_after_failure] must be boolean when provided. '
            . 'worker_session.requirements.0: Worker session requirements must be non-empty strings. '
            . 'worker_session.requirements.2: Worker session requirements must be non-empty strings.' => [
                'session_id' => 'gpu-render', 'connection' => ' ', 'queue' => [], 'lease_seconds' => 0, 'ttl_seconds' => '1800',
                'max_concurrent_activities' => false, 'create_if_missing' => 1, 'allow_reacquire_after_failure' => 'false',
                'requirements' => [' ', 'gpu:l4', 7, 'fs:/mnt/models'],
            ],
            'worker_session.requirements: Worker session requirements must be a list of non-empty strings.' => ['session_id' => 's', 'requirements' => 'gpu'],
            'worker_session.lease_seconds: Worker session field [lease_seconds] must be a positive integer when provided.' => ['session_id' => 's', 'lease_seconds' => 1.0],
        ];
        foreach ($cases as $message => $raw) {
            try {
                WorkerSessionOptions::fromSnapshot($raw);
                $this->fail("no exception for: {$message}");
            } catch (\InvalidArgumentException $e) {
                $this->assertSame(trim($message), $e->getMessage());
            }
        }
        $o = WorkerSessionOptions::fromSnapshot(['session_id' => 's', 'queue' => null, 'lease_seconds' => null, 'create_if_missing' => null, 'requirements' => null]);
        $this->assertSame([null, [], null, true], [$o->queue, $o->requirements, $o->leaseSeconds, $o->createIfMissing], 'explicit null is not provided');
    }

    public function test_a_bound_first_step_writes_the_session_columns(): void
    {
        $b = Queuety::workflow('render')->on_queue('wf');
        $b->worker_session('gpu-render', new WorkerSessionOptions(queue: 'gpu-activities', requirements: ['gpu:nvidia-l4'], ttlSeconds: 600))
            ->then('RenderFrames');
        $b->then('Publish');
        $id = $b->dispatch(['n' => 1]);
        $this->assertSame([['RenderFrames', 'gpu-activities', 'gpu-render', self::GPU]], $this->session_jobs($id));

        $state = json_decode($this->conn->pdo()->query("SELECT state FROM wp_queuety_workflows WHERE id = {$id}")->fetchColumn(), true);
        $this->assertSame('gpu-render', $state['_steps'][0]['worker_session']['session_id']);
        $this->assertArrayNotHasKey('worker_session', $state['_steps'][1]);
    }

    public function test_every_parallel_branch_is_bound_and_a_for_each_placeholder_is_not(): void
    {
        $b = Queuety::workflow('par');
        $b->worker_session('gpu-render', new WorkerSessionOptions(queue: 'gpu-activities', requirements: ['gpu:nvidia-l4'], ttlSeconds: 600))
            ->parallel(['UploadA', ' UploadB ']);
        $id = $b->dispatch();
        $this->assertSame([
            ['UploadA', 'gpu-activities', 'gpu-render', self::GPU],
            ['UploadB', 'gpu-activities', 'gpu-render', self::GPU],
        ], $this->session_jobs($id));

        $b = Queuety::workflow('fe');
        $b->worker_session('gpu-render', new WorkerSessionOptions(queue: 'gpu-activities'))
            ->for_each('items', 'EncodeFrame', mode: ForEachMode::FirstSuccess)->compensate_with('Undo');
        $id = $b->dispatch(['items' => [1]]);
        $this->assertSame([['__queuety_for_each', 'default', null, null]], $this->session_jobs($id), 'the items are bound when the daemon expands them');
        $state = json_decode($this->conn->pdo()->query("SELECT state FROM wp_queuety_workflows WHERE id = {$id}")->fetchColumn(), true);
        $this->assertSame(['reducer_class', 'worker_session', 'compensation'], array_slice(array_keys($state['_steps'][0]), -3), 'key order matches the Go builder');
        $this->assertSame('Undo', $state['_steps'][0]['compensation']);
    }

    public function test_an_unqueued_session_takes_the_jobs_queue(): void
    {
        $b = Queuety::workflow('cpu')->on_queue('bulk');
        $b->worker_session('cpu', new WorkerSessionOptions(connection: 'redis', allowReacquireAfterFailure: false))->then('Thumb');
        $id = $b->dispatch();
        $this->assertSame([['Thumb', 'bulk', 'cpu',
            '{"session_id":"cpu","connection":"redis","queue":"bulk","requirements":[],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":false}']],
            $this->session_jobs($id));
    }

    public function test_plain_jobs_can_be_bound(): void
    {
        $row = $this->job(Queuety::dispatch('render_one', ['f' => 1])
            ->worker_session('gpu-render', new WorkerSessionOptions(queue: 'gpu-activities', requirements: ['gpu:nvidia-l4'], ttlSeconds: 600))->id());
        $this->assertSame(['gpu-activities', 'gpu-render', self::GPU], [$row['queue'], $row['session_id'], $row['worker_session']]);

        $row = $this->job(Queuety::dispatch('render_two')->on_queue('own')
            ->worker_session('gpu-render', new WorkerSessionOptions(queue: 'gpu-activities'))->id());
        $this->assertSame('own', $row['queue'], 'an explicit queue wins over the session queue');
        $this->assertSame('gpu-activities', json_decode((string) $row['worker_session'], true)['queue']);

        $row = $this->job(Queuety::dispatch('plain')->id());
        $this->assertSame([null, null], [$row['session_id'], $row['worker_session']]);

        try {
            Queuety::dispatch('bad')->worker_session(' ');
            $this->fail('a blank session id was accepted');
        } catch (\InvalidArgumentException $e) {
            $this->assertSame('Worker session session id must be a non-empty string.', $e->getMessage());
        }
    }

    /**
     * @return list<array{string, string, string|null, string|null}>
     */
    private function session_jobs(int $workflow_id): array
    {
        return array_map(static fn (array $r): array => [$r['handler'], $r['queue'], $r['session_id'], $r['worker_session']],
            $this->conn->pdo()->query("SELECT handler, queue, session_id, worker_session FROM wp_queuety_jobs WHERE workflow_id = {$workflow_id} ORDER BY id")->fetchAll(\PDO::FETCH_ASSOC));
    }
}
