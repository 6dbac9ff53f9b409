<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\ForEachMode;
use Queuety\Enums\WaitMode;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\WorkflowRows;
use Queuety\WorkflowBuilder;

require_once __DIR__ . '/fixtures/workflow-classes.php';

/**
 * The bridge dispatches the workflows of the scenarios recorded from the
 * real plugin (testdata/queuety-plugin/wf_*.json and
 * seed003_*.json; each fixture's "code" is the PHP that ran) and writes
 * the same workflows row, first step jobs, workflow_started log row and
 * dispatch key. The chains are the ones workflow/builder_fixtures_test.go
 * rebuilds; a row first recorded after the runtime had touched it is
 * compared after undoing exactly that change. Workflows the runtime
 * itself dispatched (run_workflow and start_agents children) are not the
 * builder's and are left out.
 */
final class FixtureWorkflowTest extends DatabaseTestCase
{
    /** Log columns that are not compared: ids and clocks. */
    private const LOG_SKIP = ['id', 'created_at'];

    /**
     * @return array<string, array{string, list<array{int, \Closure(): array{WorkflowBuilder, array<string, mixed>}, (\Closure(array<string, mixed>): array<string, mixed>)|null}>}>
     */
    public static function scenarios(): array
    {
        $wb = static fn (string $name): WorkflowBuilder => Queuety::workflow($name);
        $summary = static fn (string $name, string $label): \Closure => static fn (): array => [$wb($name)->then('SummaryStep'), ['label' => $label]];
        return [
            'wf_sequence' => ['wf_sequence.json', [
                [1, static fn (): array => [$wb('seq')->then('IncStep')->then('IncStep', 'second')->then('IncStep'), ['n' => 0, 'title' => "\u{00dc}n\u{00ef}/code"]], null],
            ]],
            'wf_parallel' => ['wf_parallel.json', [
                [1, static fn (): array => [$wb('par')->parallel(['BranchA', 'BranchB'])->then('IncStep'), ['n' => 10]], null],
            ]],
            'wf_delay_repeat' => ['wf_delay_repeat.json', [
                [1, static fn (): array => [$wb('loop')->then('DraftStep', 'draft')->delay(seconds: 30)
                    ->repeat_until('draft', 'approved', true, max_iterations: 3)->then('IncStep'), ['n' => 0]], null],
            ]],
            'wf_for_each_quorum_reducer' => ['wf_for_each_quorum_reducer.json', [
                [1, static fn (): array => [$wb('fe')->then('PlanItems')
                    ->for_each('items', 'ItemStep', 'results', ForEachMode::Quorum, 2, 'SumReducer')->then('IncStep'), []], null],
            ]],
            'wf_idempotency_key' => ['wf_idempotency_key.json', [
                [1, static fn (): array => [$wb('once')->idempotency_key('order-42')->then('IncStep'), ['n' => 0]], null],
            ]],
            'wf_run_workflow' => ['wf_run_workflow.json', [
                [1, static fn (): array => [$wb('outer')->then('IncStep')
                    ->run_workflow('inner', $wb('inner')->then('IncStep')->then('IncStep'))->then('IncStep'), ['n' => 0]], null],
            ]],
            'wf_signal' => ['wf_signal.json', [
                [1, static fn (): array => [$wb('approve')->then('IncStep')->wait_for_signal('approval')->then('IncStep'), ['n' => 0]], null],
            ]],
            'wf_cancel_compensation' => ['wf_cancel_compensation.json', [
                [1, static fn (): array => [$wb('comp')->then('IncStep')->compensate_with('ReleaseLocks')->wait_for_signal('go')->then('IncStep'), ['n' => 0]],
                    // First recorded after IncStep ran: n went 0 -> 1 and
                    // the compensation snapshot was appended.
                    static function (array $state): array {
                        $state['n'] = 0;
                        unset($state['_compensation_stack']);
                        return $state;
                    }],
            ]],
            'seed003_start_agents_group' => ['seed003_start_agents_group.json', [
                [1, static fn (): array => [$wb('brief_research')->then('PlanTopicsStep')
                    ->start_agents('agent_tasks', $wb('agent_task')->then('ResearchTopicStep'), group_key: 'researchers')
                    ->wait_for_agent_group('researchers', WaitMode::Quorum, 2, 'agent_results')
                    ->then('SynthesizeBriefStep'), ['brief_id' => 7]], null],
            ]],
            'seed003_wait_all_fails' => ['seed003_wait_all_fails.json', [
                [1, $summary('dep_ok', 'ok'), null],
                // FailingStep's #[QueuetyStep(max_attempts: 1)] reaches the job.
                [2, static fn (): array => [$wb('dep_bad')->then('FailingStep'), []], null],
                [3, static fn (): array => [$wb('needs_all')->wait_for_workflows([1, 2], WaitMode::All, 'deps')->then('SummaryStep'), []],
                    // First recorded parked: the placeholder appended _wait.
                    static function (array $state): array {
                        unset($state['_wait']);
                        return $state;
                    }],
            ]],
            'seed003_wait_any_from_state' => ['seed003_wait_any_from_state.json', [
                // First recorded completed: SummaryStep appended its output.
                [1, $summary('dep_a', 'a'), static function (array $state): array {
                    unset($state['summary']);
                    return $state;
                }],
                [2, $summary('dep_b', 'b'), null],
                [3, static fn (): array => [$wb('aggregator')->wait_for_workflows('dependency_ids', WaitMode::Any, 'winner'), ['dependency_ids' => [1, 2]]], null],
            ]],
            'seed003_wait_for_workflow' => ['seed003_wait_for_workflow.json', [
                [1, static fn (): array => [$wb('research_run')->then('PlanResearchStep')->for_each('tasks', 'ExecuteResearchTask', 'results'), ['brief_id' => 42]], null],
                [2, static fn (): array => [$wb('editorial_run')->wait_for_workflow(1, 'research')->then('DraftBriefStep'), []], null],
            ]],
            'seed003_wait_quorum' => ['seed003_wait_quorum.json', [
                [1, $summary('dep_a', 'a'), null],
                [2, $summary('dep_b', 'b'), null],
                [3, $summary('dep_c', 'c'), null],
                [4, static fn (): array => [$wb('synthesis_run')->wait_for_workflows([1, 2, 3], WaitMode::Quorum, 'dependencies', quorum: 2)
                    ->then('SummaryStep'), ['label' => 'q']], null],
            ]],
        ];
    }

    /**
     * @dataProvider scenarios
     * @param list<array{int, \Closure(): array{WorkflowBuilder, array<string, mixed>}, (\Closure(array<string, mixed>): array<string, mixed>)|null}> $workflows
     */
    public function test_dispatch_writes_the_plugins_rows(string $file, array $workflows): void
    {
        $fixture = self::fixture($file);
        $rows = new WorkflowRows($this->conn->pdo());
        foreach ($workflows as [$expected_id, $chain, $undo]) {
            [$builder, $initial] = $chain();
            $id = $builder->dispatch($initial);
            $this->assertSame($expected_id, $id, 'workflow ids follow the fixture');

            [$snapshot, $want] = self::first_row($fixture, $id);
            $state = $want['state'];
            if ($undo !== null) {
                $state = json_encode($undo(json_decode($state, true, 512, JSON_THROW_ON_ERROR)), JSON_THROW_ON_ERROR);
            }
            $got = $rows->workflow($id);
            $this->assertSame($state, $got['state'], "workflow {$id} state bytes");
            $this->assertSame([$want['name'], (int) $want['total_steps'], null, null, null],
                [$got['name'], $got['total_steps'], $got['parent_workflow_id'], $got['parent_step_index'], $got['deadline_seconds']], "workflow {$id} row");
            $this->assertSame('running', $got['status']);
            $this->assertSame(0, $got['current_step']);

            $this->assertFirstJobsMatch($snapshot, $id, $rows->jobs($id));
            $this->assertStartedLogMatches($fixture, $id, $rows->started_logs($id));
            $keys = array_values(array_map(static fn (array $k): string => (string) $k['dispatch_key'],
                array_filter($snapshot['workflow_dispatch_keys'], static fn (array $k): bool => (int) $k['workflow_id'] === $id)));
            $this->assertSame($keys, $rows->dispatch_keys($id), "workflow {$id} dispatch key");
        }
    }

    /**
     * @param array<string, mixed>       $snapshot
     * @param list<array<string, mixed>> $got
     */
    private function assertFirstJobsMatch(array $snapshot, int $workflow_id, array $got): void
    {
        $want = array_values(array_filter($snapshot['jobs'],
            static fn (array $j): bool => (int) $j['workflow_id'] === $workflow_id && (int) $j['step_index'] === 0));
        $this->assertNotEmpty($got);
        $this->assertGreaterThanOrEqual(count($got), count($want), "workflow {$workflow_id} first jobs");
        foreach ($got as $i => $job) {
            $this->assertSame(0, $job['delay_seconds'], 'no delay on a first step job');
            unset($job['delay_seconds']);
            $expected = [];
            foreach (array_keys($job) as $column) {
                $expected[$column] = $want[$i][$column];
            }
            $this->assertEquals($expected, $job, "workflow {$workflow_id} job {$i}");
            $this->assertSame($want[$i]['payload'], $job['payload'], 'payload bytes');
        }
    }

    /**
     * @param array<string, mixed>       $fixture
     * @param list<array<string, mixed>> $got
     */
    private function assertStartedLogMatches(array $fixture, int $workflow_id, array $got): void
    {
        $want = null;
        foreach ($fixture['snapshots'] as $snapshot) {
            foreach ($snapshot['logs'] as $log) {
                if ($log['event'] === 'workflow_started' && (int) $log['workflow_id'] === $workflow_id) {
                    $want = $log;
                    break 2;
                }
            }
        }
        $this->assertNotNull($want, "the fixture's workflow_started row for workflow {$workflow_id}");
        $this->assertCount(1, $got);
        foreach ($want as $column => $value) {
            if (!in_array($column, self::LOG_SKIP, true)) {
                $this->assertSame($value === null ? null : (string) $value, $got[0][$column] === null ? null : (string) $got[0][$column], "log column {$column}");
            }
        }
    }

    /**
     * The first snapshot that holds the workflow, and its row there.
     *
     * @param array<string, mixed> $fixture
     * @return array{array<string, mixed>, array<string, mixed>}
     */
    private static function first_row(array $fixture, int $workflow_id): array
    {
        foreach ($fixture['snapshots'] as $snapshot) {
            foreach ($snapshot['workflows'] as $row) {
                if ((int) $row['id'] === $workflow_id) {
                    return [$snapshot, $row];
                }
            }
        }
        self::fail("workflow {$workflow_id} is in no snapshot");
    }

    /**
     * @return array<string, mixed>
     */
    public static function fixture(string $name): array
    {
        $path = dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name;
        self::assertFileExists($path, 'plugin fixture');
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
