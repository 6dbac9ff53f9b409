<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\StateMachineStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Machine calls from several PHP processes at once: the machine's row
 * lock lets one event through (one transition, one action job) and
 * rejects the rest; one idempotency key makes one machine.
 */
final class MachineRaceTest extends DatabaseTestCase
{
    private const RACERS = 6;

    public function test_one_event_of_many_concurrent_ones_transitions(): void
    {
        $id = Queuety::machine('door')->state('closed')->on('open', 'opened')->state('opened')->action('OpenAction')
            ->dispatch();
        $out = $this->race(['event', (string) $id]);

        $this->assertSame(1, count(array_filter($out, static fn (string $l) => $l === "ok {$id}")), implode("\n", $out));
        $this->assertSame(self::RACERS - 1, count(array_filter($out, static fn (string $l) => str_starts_with($l,
            "rejected State machine {$id} is not waiting for external events; current status is 'running'."))), implode("\n", $out));
        $events = array_count_values(array_column(Queuety::machine_timeline($id, null), 'event'));
        $this->assertSame([1, 1, self::RACERS - 1], [$events['transitioned'], $events['action_enqueued'], $events['event_rejected']]);
        $this->assertSame(1, (int) $this->conn->pdo()->query("SELECT COUNT(*) FROM wp_queuety_jobs WHERE handler = '__queuety_state_machine_action'")->fetchColumn());
        $this->assertSame(StateMachineStatus::Running, Queuety::machine_status($id)?->status);
    }

    public function test_one_key_dispatched_at_once_makes_one_machine(): void
    {
        $out = $this->race(['dispatch']);

        $this->assertCount(self::RACERS, $out);
        $ids = array_unique($out);
        $this->assertSame(['ok 1'], array_values($ids), implode("\n", $out));
        $this->assertSame(1, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_state_machines')->fetchColumn());
        $this->assertSame(1, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn(), 'one action job');
    }

    /**
     * Start the racers, release them together, and collect their lines.
     *
     * @param list<string> $args
     * @return list<string>
     */
    private function race(array $args): array
    {
        $start = sys_get_temp_dir() . '/qtrace-' . bin2hex(random_bytes(4));
        $procs = [];
        for ($i = 0; $i < self::RACERS; $i++) {
            $p = proc_open(array_merge([PHP_BINARY, __DIR__ . '/fixtures/machine-race.php', $this->database, $start], $args),
                [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $this->assertIsResource($p);
            $procs[] = [$p, $pipes];
        }
        touch($start);
        $out = [];
        foreach ($procs as [$p, $pipes]) {
            $line = trim((string) stream_get_contents($pipes[1]));
            $err = trim((string) stream_get_contents($pipes[2]));
            fclose($pipes[1]);
            fclose($pipes[2]);
            $this->assertSame(0, proc_close($p), $err);
            $out[] = $line;
        }
        unlink($start);
        return $out;
    }
}
