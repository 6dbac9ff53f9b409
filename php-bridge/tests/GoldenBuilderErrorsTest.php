<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Enums\WaitMode;
use Queuety\Tests\Support\Golden;
use Queuety\WorkflowBuilder;

/**
 * The builder throws what the plugin's threw (class and message) for the
 * error cases of ../workflow/testdata/golden.jsonl. No database: every
 * one of them throws before dispatch reaches it.
 */
final class GoldenBuilderErrorsTest extends TestCase
{
    /**
     * @return array<string, array{string}>
     */
    public static function error_cases(): array
    {
        return Golden::names('error');
    }

    /**
     * @dataProvider error_cases
     */
    public function test_builder_error_matches_the_plugin(string $case): void
    {
        $golden = Golden::cases()[$case];
        $chains = self::error_chains();
        $this->assertArrayHasKey($case, $chains, "no PHP chain for golden case {$case}");
        try {
            $chains[$case]();
        } catch (\Throwable $e) {
            $this->assertSame([$golden['class'], $golden['message']], [get_class($e), $e->getMessage()]);
            return;
        }
        $this->fail("{$case}: the chain did not throw");
    }

    public function test_every_error_chain_has_a_golden_case(): void
    {
        $this->assertEqualsCanonicalizing(array_keys(self::error_chains()), array_keys(self::error_cases()));
    }

    /**
     * gen_golden.php's chains that throw.
     *
     * @return array<string, callable(): mixed>
     */
    private static function error_chains(): array
    {
        $wb = static fn (string $name): WorkflowBuilder => new WorkflowBuilder($name);
        return [
            'error_no_steps' => static fn () => $wb('empty')->dispatch(),
            'error_state_bytes' => static fn () => $wb('big')->max_state_bytes(10)->then('StepA')->dispatch(['text' => 'more than ten bytes']),
            'error_repeat_empty_target' => static fn () => $wb('x')->then('A')->repeat_until(' ', 'k'),
            'error_repeat_empty_state_key' => static fn () => $wb('x')->then('A')->repeat_until('0', ' '),
            'error_repeat_empty_condition' => static fn () => $wb('x')->then('A')->repeat_until('0', condition_class: ' '),
            'error_repeat_no_condition' => static fn () => $wb('x')->then('A')->repeat_until('0'),
            'error_repeat_both' => static fn () => $wb('x')->then('A')->repeat_while('0', 'k', condition_class: 'C'),
            'error_repeat_max_iterations' => static fn () => $wb('x')->then('A')->repeat_while('0', 'k', max_iterations: 0),
            'error_repeat_unknown_target' => static fn () => $wb('x')->then('A')->repeat_while('later', 'k')->then('B', 'later'),
            'error_signal_no_names' => static fn () => $wb('x')->wait_for_signals([' ', '']),
            'error_signal_quorum' => static fn () => $wb('x')->wait_for_signals(['a'], WaitMode::Quorum),
            'error_workflow_quorum_missing' => static fn () => $wb('x')->wait_for_workflows([1, 2], WaitMode::Quorum),
            'error_workflow_quorum_zero' => static fn () => $wb('x')->wait_for_workflows('k', WaitMode::Quorum, null, null, 0),
            'error_workflow_empty_key' => static fn () => $wb('x')->wait_for_workflows('  '),
            'error_group_empty' => static fn () => $wb('x')->wait_for_workflow_group(' '),
            'error_group_quorum' => static fn () => $wb('x')->wait_for_agent_group('team', WaitMode::Quorum),
            'error_start_items_key' => static fn () => $wb('x')->start_workflows(' ', $wb('c')->then('A')),
            'error_start_result_key' => static fn () => $wb('x')->start_workflows('items', $wb('c')->then('A'), ' '),
            'error_start_payload_key' => static fn () => $wb('x')->start_agents('items', $wb('c')->then('A'), 'ids', ''),
            'error_compensate_first' => static fn () => $wb('x')->compensate_with('Undo'),
            'error_version' => static fn () => $wb('x')->version(' '),
            'error_idempotency_key' => static fn () => $wb('x')->idempotency_key(''),
            'error_max_transitions' => static fn () => $wb('x')->max_transitions(0),
            'error_max_for_each_items' => static fn () => $wb('x')->max_for_each_items(-1),
            'error_max_state_bytes' => static fn () => $wb('x')->max_state_bytes(0),
            'error_max_cost_units' => static fn () => $wb('x')->max_cost_units(0),
            'error_max_started_workflows' => static fn () => $wb('x')->max_started_workflows(0),
        ];
    }
}
