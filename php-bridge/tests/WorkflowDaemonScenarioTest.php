<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\Enums\WaitMode;
use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/scenario-classes.php';

/**
 * Issue 4, first acceptance line, end to end: PHP dispatches a workflow
 * with parallel, for_each, wait_for_workflows (all, any, quorum),
 * start_agents with a group and wait_for_agent_group; one
 * `queuety work --workflows --php ...` completes it, every step class
 * (fixtures/scenario-classes.php) running in the PHP pool; PHP reads the
 * final state with workflow_status(). The shape is the seed's
 * (shared/seeds/003): research workflows, waits on them with every mode,
 * agents started under the group 'researchers', a quorum of 2 of them.
 */
final class WorkflowDaemonScenarioTest extends DatabaseTestCase
{
    private const COMPLETE_WAIT = 60.0;
    private const TOPICS = ['queues', 'workflows', 'agents'];

    public function test_daemon_completes_a_bridge_dispatched_workflow_with_every_fan_out_and_wait(): void
    {
        $research = [];
        foreach (['storage', 'engine', 'bridge'] as $topic) {
            $research[] = Queuety::workflow('scn_research')->then(\ScnResearchStep::class)->dispatch(['topic' => $topic]);
        }
        $agent = Queuety::workflow('scn_agent')->then(\ScnAgentStep::class);
        $id = Queuety::workflow('scn_brief')
            ->then(\ScnPlanTopicsStep::class)
            ->parallel([\ScnBranchA::class, \ScnBranchB::class])
            ->for_each('topics', \ScnOutlineItem::class, 'outlines')
            ->wait_for_workflows($research, WaitMode::All, 'research_all')
            ->wait_for_workflows($research, WaitMode::Any, 'research_any')
            ->wait_for_workflows($research, WaitMode::Quorum, 'research_quorum', quorum: 2)
            ->start_agents('agent_tasks', $agent, group_key: 'researchers')
            ->wait_for_agent_group('researchers', WaitMode::Quorum, 2, 'agent_results')
            ->then(\ScnSynthesizeStep::class)
            ->dispatch(['brief_id' => 7]);

        $daemon = $this->start_daemon();
        try {
            $this->wait_for_workflows($daemon, [$id], 'the main workflow');
            $status = Queuety::workflow_status($id);
            $this->assertNotNull($status);
            $this->assertSame(WorkflowStatus::Completed, $status->status, $this->dump($daemon, $id));
            $this->assertSame(9, $status->total_steps);
            $this->assertSame(9, $status->current_step);
            $this->assertNull($status->error_message);
            $state = $status->state;

            $agents = $state['agent_workflow_ids'] ?? null;
            $this->assertIsArray($agents, 'start_agents stored the agents\' ids under its default result key');
            $this->assertCount(3, $agents);
            // The slow agent finishes after the main workflow has: wait for it too.
            $this->wait_for_workflows($daemon, array_merge($research, $agents), 'the research and agent workflows');
        } finally {
            $daemon->stop();
        }

        // (The parallel branches merge in the order they complete.)
        $this->assertEqualsCanonicalizing([
            'brief_id', 'topics', 'agent_tasks', 'planned_for', 'branch_a', 'branch_b', 'outlines',
            'research_all', 'research_any', 'research_quorum', 'agent_workflow_ids', 'agent_results', 'synthesis',
        ], array_keys($state), 'every step\'s output merged into the public state, and nothing else');

        // then + parallel: the planning step's and both branches' outputs.
        $this->assertSame(7, $state['brief_id']);
        $this->assertSame(self::TOPICS, $state['topics']);
        $this->assertSame(['fast-1', 'fast-2', 'slow'], $state['agent_tasks']);
        $this->assertSame(7, $state['planned_for']);
        $this->assertSame('A saw 3 topics', $state['branch_a'], 'branch A ran after the planning step, on its state');
        $this->assertSame('B for brief 7', $state['branch_b']);

        // for_each: the aggregate under its result key.
        $outlines = $state['outlines'];
        $this->assertSame(['mode' => 'all', 'quorum' => null, 'total' => 3, 'succeeded' => 3, 'failed' => 0, 'settled' => true],
            array_intersect_key($outlines, array_flip(['mode', 'quorum', 'total', 'succeeded', 'failed', 'settled'])));
        $this->assertSame([], $outlines['failures']);
        $this->assertCount(3, $outlines['results']);
        foreach (self::TOPICS as $i => $topic) {
            $entry = $outlines['results'][$i];
            $this->assertSame($i, $entry['index']);
            $this->assertSame($topic, $entry['item']);
            $this->assertSame(['outline' => strtoupper($topic), 'position' => $i, 'of' => 3], $entry['output'],
                'ForEachHandler::handle_item got the state, the item and its index');
            $this->assertIsInt($entry['job_id']);
        }
        $this->assertContains($outlines['winner'], $outlines['results'], 'the winner is one of the results');

        // The waits on the research workflows: id => public state.
        $researched = [];
        foreach (['storage', 'engine', 'bridge'] as $i => $topic) {
            $researched[$research[$i]] = ['topic' => $topic, 'summary' => "summary of {$topic}", 'researched_by' => 'ScnResearchStep'];
        }
        $this->assertSame($researched, $state['research_all'], 'All: every research workflow\'s public state');
        $this->assertSame([$research[0] => $researched[$research[0]]], $state['research_any'], 'Any: the first completed, in the order given');
        $this->assertSame($researched, $state['research_quorum'], 'Quorum 2: every dependency completed when it was evaluated (all three were)');

        // start_agents + wait_for_agent_group('researchers', Quorum, 2): the two fast agents.
        $results = $state['agent_results'];
        $this->assertSame([$agents[0], $agents[1]], array_keys($results), 'quorum 2 of 3: settled on the two fast agents, without the slow one');
        foreach (['fast-1', 'fast-2'] as $i => $task) {
            $r = $results[$agents[$i]];
            $this->assertSame($task, $r['agent_task'], 'the item under the default payload key');
            $this->assertSame($i, $r['start_item_index']);
            $this->assertSame("finding for {$task}", $r['finding']);
            $this->assertSame($i, $r['agent_index']);
            $this->assertSame(7, $r['brief_id'], 'the agent inherited the parent\'s public state');
            $this->assertSame('A saw 3 topics', $r['branch_a']);
            $this->assertArrayNotHasKey('agent_tasks', $r, 'but not the items key');
            $this->assertArrayNotHasKey('agent_workflow_ids', $r, 'nor the result key');
        }

        // The final step combined all of it.
        $this->assertSame([
            'branches' => 'A saw 3 topics | B for brief 7',
            'outlines' => ['QUEUES', 'WORKFLOWS', 'AGENTS'],
            'research_all' => array_map('strval', $research),
            'research_any' => [(string) $research[0]],
            'research_quorum' => array_map('strval', $research),
            'findings' => ['finding for fast-1', 'finding for fast-2'],
        ], $state['synthesis']);

        // Every research and agent workflow completed, the agents as started by the main workflow.
        foreach ($research as $i => $rid) {
            $s = Queuety::workflow_status($rid);
            $this->assertSame(WorkflowStatus::Completed, $s?->status, "research workflow {$rid}");
            $this->assertSame($researched[$rid], $s->state);
        }
        $started = $this->conn->pdo()->query('SELECT id, name, status FROM wp_queuety_workflows WHERE id IN (' . implode(',', $agents) . ') ORDER BY id')
            ->fetchAll(PDO::FETCH_ASSOC);
        $this->assertSame(array_map(static fn (int $a): array => ['id' => (string) $a, 'name' => 'scn_agent', 'status' => 'completed'], $agents),
            array_map(static fn (array $r): array => array_map('strval', $r), $started));
        $slow = Queuety::workflow_status($agents[2]);
        $this->assertSame(['agent_task' => 'slow', 'start_item_index' => 2, 'finding' => 'finding for slow', 'agent_index' => 2],
            array_intersect_key($slow?->state ?? [], array_flip(['agent_task', 'start_item_index', 'finding', 'agent_index'])));

        // No job left behind, none retried: every step ran once.
        $jobs = $this->conn->pdo()->query('SELECT status, MAX(attempts) AS attempts, COUNT(*) AS n FROM wp_queuety_jobs GROUP BY status')
            ->fetchAll(PDO::FETCH_ASSOC);
        $this->assertCount(1, $jobs, 'every job completed: ' . json_encode($jobs));
        $this->assertSame(['completed', '1'], [$jobs[0]['status'], (string) $jobs[0]['attempts']]);
    }

    private function start_daemon(): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/scenario-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '3',
            '--poll-interval', '20ms', '--signal-poll-interval', '200ms', '--wait-sweep-interval', '1s'], ['QUEUETY_DSN' => $this->go_dsn()]);
    }

    /**
     * Poll workflow_status() until every one of $ids is completed; fail
     * at once if one fails or is cancelled, or after COMPLETE_WAIT, with
     * the daemon's log and the rows.
     *
     * @param list<int> $ids
     */
    private function wait_for_workflows(DaemonProcess $daemon, array $ids, string $what): void
    {
        $deadline = microtime(true) + self::COMPLETE_WAIT;
        while (true) {
            $statuses = array_map(static fn (int $id): ?WorkflowStatus => Queuety::workflow_status($id)?->status, $ids);
            if (array_filter($statuses, static fn (?WorkflowStatus $s): bool => $s !== WorkflowStatus::Completed) === []) {
                return;
            }
            $ended = array_filter($statuses, static fn (?WorkflowStatus $s): bool => in_array($s, [WorkflowStatus::Failed, WorkflowStatus::Cancelled, null], true));
            if ($ended !== [] || microtime(true) >= $deadline || !$daemon->running()) {
                $this->fail("{$what} did not complete: " . json_encode(array_combine($ids, array_map(static fn (?WorkflowStatus $s): ?string => $s?->value, $statuses)))
                    . "\n" . $this->dump($daemon, $ids[0]));
            }
            usleep(100_000);
        }
    }

    private function dump(DaemonProcess $daemon, int $id): string
    {
        $pdo = $this->conn->pdo();
        $status = Queuety::workflow_status($id);
        $workflows = $pdo->query('SELECT id, name, status, current_step, total_steps, error_message, state FROM wp_queuety_workflows ORDER BY id')->fetchAll(PDO::FETCH_ASSOC);
        $jobs = $pdo->query('SELECT id, workflow_id, step_index, handler, status, attempts, error_message FROM wp_queuety_jobs ORDER BY id')->fetchAll(PDO::FETCH_ASSOC);
        $logs = $pdo->query("SELECT job_id, workflow_id, step_index, handler, event, error_message FROM wp_queuety_logs WHERE event IN ('failed', 'buried', 'workflow_failed') ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
        $rows = static fn (array $r): string => implode("\n", array_map(static fn (array $row): string => json_encode($row, JSON_UNESCAPED_SLASHES), $r));
        return "workflow {$id}: " . var_export($status, true)
            . "\ndaemon running: " . var_export($daemon->running(), true) . "\ndaemon log:\n" . $daemon->output()
            . "\nworkflows:\n" . $rows($workflows) . "\njobs:\n" . $rows($jobs) . "\nfailure logs:\n" . $rows($logs);
    }
}
