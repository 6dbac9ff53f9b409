<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Bridge\ClassCall;
use Queuety\Bridge\JobRunner;

require_once __DIR__ . '/fixtures/callback-classes.php';

/**
 * The pool's "call" request: a batch callback, a chain's catch, a state
 * action or guard called as the plugin's worker calls them, with the
 * Batch, Job and exception objects built from what the daemon sends.
 */
final class ClassCallTest extends TestCase
{
    private string $file;

    protected function setUp(): void
    {
        $this->file = tempnam(sys_get_temp_dir(), 'calls');
    }

    protected function tearDown(): void
    {
        @unlink($this->file);
    }

    /** @return list<array<mixed>> */
    private function calls(): array
    {
        $lines = array_filter(explode("\n", (string) file_get_contents($this->file)));
        return array_map(static fn (string $l): array => json_decode($l, true), array_values($lines));
    }

    /** @return array<string, mixed> */
    private function batch_row(): array
    {
        return ['id' => 1, 'name' => $this->file, 'total_jobs' => 3, 'pending_jobs' => 1, 'failed_jobs' => 1,
            'failed_job_ids' => '[2]', 'options' => '{"then":"BatchThenCallback","catch":"BatchCatchCallback"}',
            'cancelled_at' => null, 'created_at' => '2026-12-01 11:08:38', 'finished_at' => null];
    }

    public function test_a_batch_callback_gets_the_batch_as_the_plugin_builds_it(): void
    {
        $runner = new JobRunner(static function (): void {
        });
        $result = $runner->run(['type' => 'run', 'seq' => 7, 'kind' => 'call', 'class' => 'BatchCatchCallback', 'method' => 'handle',
            'args' => [['__queuety_arg' => 'batch', 'row' => $this->batch_row()]], 'options' => ['optional' => true]]);
        $this->assertTrue($result['ok'], json_encode($result));
        $this->assertSame(7, $result['seq']);
        $this->assertSame([['call' => 'BatchCatchCallback::handle', 'batch' => [
            'id' => 1, 'name' => $this->file, 'total_jobs' => 3, 'pending_jobs' => 1, 'failed_jobs' => 1, 'failed_job_ids' => [2],
            'options' => ['then' => 'BatchThenCallback', 'catch' => 'BatchCatchCallback'], 'progress' => 66,
            'finished' => false, 'cancelled' => false, 'has_failures' => true,
        ]]], $this->calls());
    }

    public function test_optional_calls_skip_a_missing_class_or_method(): void
    {
        $this->assertNull(ClassCall::run(['class' => 'NoSuchCallback', 'method' => 'handle', 'args' => [], 'options' => ['optional' => true]]));
        $this->assertNull(ClassCall::run(['class' => 'NotAnAction', 'method' => 'handle', 'args' => [], 'options' => ['optional' => true]]));
        $this->expectExceptionMessage("Class 'NoSuchCallback' could not be loaded.");
        ClassCall::run(['class' => 'NoSuchCallback', 'method' => 'handle', 'args' => []]);
    }

    public function test_chain_catch_gets_the_job_and_the_exception_by_arity(): void
    {
        $job = ['__queuety_arg' => 'job', 'row' => ['id' => 2, 'queue' => 'default', 'handler' => 'ProcessDataJob',
            'payload' => json_encode(['mode' => 'strict', 'marker' => $this->file, '__chain_catch' => 'ChainFailedHandler']),
            'priority' => 0, 'status' => 'processing', 'attempts' => 1, 'max_attempts' => 3, 'available_at' => '2026-12-01 11:08:38',
            'reserved_at' => '2026-12-01 11:08:38', 'depends_on' => 1, 'cost_units' => 1, 'created_at' => '2026-12-01 11:08:38']];
        $e = ['__queuety_arg' => 'throwable', 'class' => 'InvalidArgumentException', 'message' => 'cannot process (strict)'];
        ClassCall::run(['class' => 'ChainFailedHandler', 'method' => 'handle', 'args' => [$job, $e], 'options' => ['fit_arity' => true]]);
        $this->assertSame([['call' => 'ChainFailedHandler::handle', 'job_id' => 2, 'handler' => 'ProcessDataJob', 'attempts' => 1,
            'message' => 'cannot process (strict)', 'class' => 'InvalidArgumentException']], $this->calls());

        // A class PHP cannot build from a message falls back to RuntimeException;
        // a handle() with fewer parameters gets fewer arguments.
        $e['class'] = 'Queuety\Bridge\WorkerCrashed';
        $out = ClassCall::run(['class' => ZeroArgCatch::class, 'method' => 'handle', 'args' => [$job, $e], 'options' => ['fit_arity' => true]]);
        $this->assertSame(0, $out);
        $this->assertSame(1, ClassCall::run(['class' => OneArgCatch::class, 'method' => 'handle', 'args' => [$job, $e], 'options' => ['fit_arity' => true]]));
    }

    public function test_state_actions_and_guards_and_their_contract(): void
    {
        $this->assertSame(['draft' => 'v1 of T'], ClassCall::run(['class' => 'DraftAction', 'method' => 'handle',
            'args' => [['title' => 'T'], null, [], []], 'options' => ['contract' => 'Queuety\Contracts\StateAction']]));
        $this->assertTrue(ClassCall::run(['class' => 'PublishGuard', 'method' => 'allows',
            'args' => [[], ['approved' => true], 'submit', []], 'options' => ['contract' => 'Queuety\Contracts\StateGuard']]));
        $this->expectExceptionMessage("State action class 'NotAnAction' must implement Queuety\\Contracts\\StateAction.");
        ClassCall::run(['class' => 'NotAnAction', 'method' => 'handle', 'args' => [],
            'options' => ['contract' => 'Queuety\Contracts\StateAction', 'contract_message' => "State action class 'NotAnAction' must implement Queuety\\Contracts\\StateAction."]]);
    }
}

final class ZeroArgCatch
{
    public function handle(): int
    {
        return func_num_args();
    }
}

final class OneArgCatch
{
    public function handle(\Queuety\Job $job): int
    {
        return func_num_args();
    }
}
