<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

use PDO;

/**
 * What a workflow dispatch wrote, read back the way
 * workflow/testdata/gen_golden.php dumped the plugin's rows (delays and
 * deadlines as differences of two timestamps), for comparison with the
 * golden lines and the recorded fixtures.
 */
final class WorkflowRows
{
    public function __construct(private readonly PDO $pdo, private readonly string $prefix = 'wp_queuety_')
    {
    }

    /**
     * @return array<string, mixed>
     */
    public function workflow(int $id): array
    {
        $row = $this->pdo->query("SELECT name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index,
            TIMESTAMPDIFF(SECOND, started_at, deadline_at) AS deadline_seconds FROM {$this->prefix}workflows WHERE id = {$id}")->fetch(PDO::FETCH_ASSOC);
        \PHPUnit\Framework\Assert::assertIsArray($row, "workflow {$id}");
        return self::ints($row, ['current_step', 'total_steps', 'parent_workflow_id', 'parent_step_index', 'deadline_seconds']);
    }

    /**
     * @return list<array<string, mixed>>
     */
    public function jobs(int $workflow_id): array
    {
        $rows = $this->pdo->query("SELECT handler, payload, queue, priority, max_attempts, step_index, cost_units, concurrency_group,
            concurrency_limit, TIMESTAMPDIFF(SECOND, created_at, available_at) AS delay_seconds
            FROM {$this->prefix}jobs WHERE workflow_id = {$workflow_id} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
        return array_map(static fn (array $r): array => self::ints($r, ['priority', 'max_attempts', 'step_index', 'cost_units', 'concurrency_limit', 'delay_seconds']), $rows);
    }

    /**
     * The workflow_started log rows, every column.
     *
     * @return list<array<string, mixed>>
     */
    public function started_logs(int $workflow_id): array
    {
        return $this->pdo->query("SELECT * FROM {$this->prefix}logs WHERE workflow_id = {$workflow_id} AND event = 'workflow_started'")->fetchAll(PDO::FETCH_ASSOC);
    }

    /**
     * @return list<string>
     */
    public function dispatch_keys(int $workflow_id): array
    {
        return $this->pdo->query("SELECT dispatch_key FROM {$this->prefix}workflow_dispatch_keys WHERE workflow_id = {$workflow_id}")->fetchAll(PDO::FETCH_COLUMN);
    }

    /**
     * @param array<string, mixed> $row
     * @param list<string>         $columns
     * @return array<string, mixed>
     */
    private static function ints(array $row, array $columns): array
    {
        foreach ($columns as $c) {
            $row[$c] = $row[$c] === null ? null : (int) $row[$c];
        }
        return $row;
    }
}
