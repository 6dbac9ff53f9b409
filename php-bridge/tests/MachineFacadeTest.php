<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\Enums\Priority;
use Queuety\Enums\StateMachineStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

require_once __DIR__ . '/fixtures/callback-classes.php';
require_once __DIR__ . '/fixtures/machine-classes.php';

/**
 * State machines without WordPress write and read the rows the plugin
 * does: testdata/queuety-plugin/state_machine.json, recorded from the
 * plugin v0.22.0 running the same code, is replayed step by step (the
 * action job the plugin's worker ran is loaded from the recording).
 */
final class MachineFacadeTest extends DatabaseTestCase
{
    /** Columns compared by presence only (clocks differ between runs). */
    private const TIMES = ['available_at', 'reserved_at', 'completed_at', 'failed_at', 'created_at', 'started_at', 'updated_at'];

    public function test_dispatch_writes_the_plugins_machine_job_and_events(): void
    {
        $snap = self::fixture('state_machine.json')['snapshots'];
        $id = Queuety::machine('review')->version('review.v1')->state('drafting')->action(\DraftAction::class)
            ->on('submit', 'published', \PublishGuard::class)->state('published', StateMachineStatus::Completed)
            ->dispatch(['doc_id' => 7, 'title' => 'Ünï/draft']);

        $this->assertSame(1, $id);
        $this->assertRowsMatch('state_machines', $snap[0]['state_machines']);
        $this->assertRowsMatch('state_machine_events', $snap[0]['state_machine_events']);
        $this->assertRowsMatch('jobs', $snap[0]['jobs']);

        $status = Queuety::machine_status($id);
        $this->assertNotNull($status);
        $this->assertSame(StateMachineStatus::Running, $status->status);
        $this->assertSame('drafting', $status->current_state);
        $this->assertSame(['submit'], $status->available_events);
        $this->assertSame('DraftAction', $status->current_action);
        $this->assertSame('review.v1', $status->definition_version);
    }

    public function test_events_guards_and_rejections_write_the_plugins_rows(): void
    {
        $snap = self::fixture('state_machine.json')['snapshots'];
        // The plugin's worker ran the action job: its rows, as recorded.
        $this->load($snap[1]);

        try {
            Queuety::machine_event(1, 'submit', ['approved' => false]);
            $this->fail('a refused event throws');
        } catch (\RuntimeException $e) {
            $this->assertSame("State 'drafting' does not allow event 'submit'.", $e->getMessage());
        }
        $this->assertRowsMatch('state_machine_events', $snap[2]['state_machine_events']);
        $this->assertRowsMatch('state_machines', $snap[2]['state_machines']);

        Queuety::machine_event(1, 'submit', ['approved' => true, 'by' => 'editor@example.com']);
        $this->assertRowsMatch('state_machine_events', $snap[3]['state_machine_events']);
        $this->assertRowsMatch('state_machines', $snap[3]['state_machines']);

        try {
            Queuety::machine_event(1, 'submit');
            $this->fail('an event to a completed machine throws');
        } catch (\RuntimeException $e) {
            $this->assertSame("State machine 1 is not waiting for external events; current status is 'completed'.", $e->getMessage());
        }
        $this->assertRowsMatch('state_machine_events', $snap[4]['state_machine_events']);
    }

    public function test_reads_list_timeline_trace_and_state_at(): void
    {
        $snap = self::fixture('state_machine.json')['snapshots'];
        $this->load($snap[3]);

        $list = Queuety::list_machines(10, 'completed');
        $this->assertSame([1], array_column($list, 'id'));
        $this->assertSame([], Queuety::list_machines(10, 'running'));

        $timeline = Queuety::machine_timeline(1, 3, 1);
        $this->assertSame([2, 3, 4], array_column($timeline, 'id'));
        $this->assertSame(['job_id' => 1, 'handler' => 'DraftAction', 'queue' => 'default', 'priority' => 0], $timeline[0]['output']);
        $this->assertCount(14, Queuety::machine_timeline(1, null));

        $trace = Queuety::machine_trace(1);
        $this->assertSame(1, $trace['machine']['id']);
        $this->assertSame('completed', $trace['machine']['status']);
        $this->assertSame(['drafting', 'published'], array_column($trace['states'], 'state_name'));
        $this->assertSame('machine_completed', $trace['states'][1]['latest']['event']);
        $this->assertSame([1], array_column($trace['jobs'], 'id'));
        $this->assertSame(1, $trace['jobs'][0]['payload']['machine_id']);

        // After event 4 (action_completed) the draft is in the state; after
        // event 1 it is not.
        $this->assertSame('v1 of Ünï/draft', Queuety::machine_state_at(1, 4)['draft']);
        $this->assertArrayNotHasKey('draft', Queuety::machine_state_at(1, 1));
        $this->assertNull(Queuety::machine_state_at(999, 1));
        $this->assertCount(14, Queuety::machine_events()->get_timeline(1, null));
    }

    public function test_a_machine_without_an_action_waits_and_a_failing_guard_rejects(): void
    {
        $definition = Queuety::machine('gate')->state('closed')->on('open', 'opened', \ExplodingGuard::class)
            ->state('opened', StateMachineStatus::Completed)->on_queue('q')->with_priority(Priority::High)->max_attempts(2)
            ->idempotency_key('gate-1')->build_runtime_definition();
        $id = Queuety::dispatch_state_machine_definition($definition, ['n' => 1], ['idempotency_key' => 'gate-1']);
        $this->assertSame($id, Queuety::dispatch_state_machine_definition($definition, ['n' => 2], ['idempotency_key' => 'gate-1']), 'the key dispatches once');
        $this->assertSame(StateMachineStatus::WaitingEvent, Queuety::machine_status($id)?->status);
        $this->assertSame(0, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn(), 'no action, no job');

        try {
            Queuety::machine_event($id, 'open', ['_private' => 1, 'who' => 'x']);
            $this->fail('a throwing guard rejects the event');
        } catch (\DomainException $e) {
            $this->assertSame('guard exploded', $e->getMessage());
        }
        $events = array_column(Queuety::machine_timeline($id), 'event');
        $this->assertSame(['machine_started', 'machine_waiting', 'event_received', 'guard_started', 'guard_failed', 'event_rejected'], $events);
        $this->assertSame(['n' => 1], Queuety::machine_status($id)?->state, 'a rejected event changes no state');
        $received = Queuety::machine_timeline($id)[2];
        $this->assertSame(['n' => 1, 'who' => 'x'], $received['state_after'], 'keys starting with _ are not merged');
        $this->assertSame('DomainException', Queuety::machine_timeline($id)[4]['error']['class']);

        $this->expectException(\InvalidArgumentException::class);
        Queuety::machine_event($id, '  ');
    }

    public function test_builder_errors_are_the_plugins(): void
    {
        $cases = [
            'State machine must define at least one state.' => static fn () => Queuety::machine('x')->build_runtime_definition(),
            "State 'a' references missing transition target 'b'." => static fn () => Queuety::machine('x')->state('a')->on('go', 'b')->build_runtime_definition(),
            'Call state() before configuring actions or transitions.' => static fn () => Queuety::machine('x')->action('A'),
            'State machine terminal states must resolve to a terminal status.' => static fn () => Queuety::machine('x')->state('a', StateMachineStatus::Running),
            'State machine max_attempts must be at least 1.' => static fn () => Queuety::machine('x')->max_attempts(0),
            'State machine initial state cannot be empty.' => static fn () => Queuety::machine('x')->initial(' '),
            'State machine definition must contain a valid initial_state.' => static fn () => Queuety::dispatch_state_machine_definition([]),
        ];
        foreach ($cases as $message => $call) {
            try {
                $call();
                $this->fail("no error: {$message}");
            } catch (\InvalidArgumentException | \RuntimeException $e) {
                $this->assertSame($message, $e->getMessage());
            }
        }
        $this->assertSame('x', Queuety::machine('x')->get_name());
        $this->assertSame('b', Queuety::machine('x')->state('a')->state('b')->initial('b')->build_runtime_definition()['initial_state']);
        $this->assertNull(Queuety::machine_status(42));
    }

    /**
     * Replace the tables' rows with a recorded snapshot's.
     *
     * @param array<string, mixed> $snapshot
     */
    private function load(array $snapshot): void
    {
        $pdo = $this->conn->pdo();
        foreach (['jobs', 'state_machines', 'state_machine_events'] as $table) {
            $pdo->exec("DELETE FROM wp_queuety_{$table}");
            foreach ($snapshot[$table] as $row) {
                $cols = array_keys($row);
                $pdo->prepare(sprintf('INSERT INTO wp_queuety_%s (%s) VALUES (%s)', $table, implode(', ', $cols), implode(', ', array_fill(0, count($cols), '?'))))
                    ->execute(array_values($row));
            }
        }
    }

    /**
     * Every recorded row is in the table with the recorded bytes; times
     * by presence, durations by presence, a stack trace by its absence of
     * nothing else.
     *
     * @param list<array<string, mixed>> $want
     */
    private function assertRowsMatch(string $table, array $want): void
    {
        $stmt = $this->conn->pdo()->query("SELECT * FROM wp_queuety_{$table} ORDER BY id");
        $rows = [];
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            $rows[(int) $row['id']] = $row;
        }
        $this->assertSame(array_column($want, 'id'), array_keys($rows), "{$table}: the recorded rows");
        foreach ($want as $expected) {
            $row = $rows[(int) $expected['id']];
            foreach ($expected as $column => $value) {
                $where = "{$table} {$expected['id']} {$column}";
                if (in_array($column, self::TIMES, true) || $column === 'duration_ms') {
                    $this->assertSame($value === null, $row[$column] === null, "{$where} presence");
                } elseif ($column === 'error' && $value !== null) {
                    $drop = static function (string $json): array {
                        $e = json_decode($json, true);
                        unset($e['trace']);
                        return $e;
                    };
                    $this->assertSame($drop($value), $drop((string) $row[$column]), $where);
                } else {
                    $this->assertSame($value === null ? null : (string) $value, $row[$column] === null ? null : (string) $row[$column], $where);
                }
            }
        }
    }

    /** @return array<string, mixed> */
    private static function fixture(string $name): array
    {
        $path = dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name;
        self::assertFileExists($path, 'plugin fixture');
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
