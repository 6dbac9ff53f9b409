<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Enums\BackoffStrategy;
use Queuety\Enums\ForEachMode;
use Queuety\Enums\WaitMode;
use Queuety\Enums\WorkflowStatus;
use Queuety\WorkflowBuilder;

require_once __DIR__ . '/fixtures/workflow-classes.php';

/**
 * The enums and contracts application code names, with the plugin's
 * values, and builder behaviour the golden cases do not pin down.
 */
final class WorkflowTypesTest extends TestCase
{
    public function test_enum_values_are_the_plugins(): void
    {
        $values = static fn (string $enum): array => array_map(static fn (\BackedEnum $c): string|int => $c->value, $enum::cases());
        $this->assertSame(['all', 'any', 'quorum'], $values(WaitMode::class));
        $this->assertSame(['all', 'first_success', 'quorum'], $values(ForEachMode::class));
        $this->assertSame(['fixed', 'linear', 'exponential'], $values(BackoffStrategy::class));
        $this->assertSame(['running', 'completed', 'failed', 'paused', 'waiting_for_signal', 'waiting_for_workflows', 'cancelled'], $values(WorkflowStatus::class));
    }

    public function test_contracts_exist_as_interfaces(): void
    {
        foreach (['Compensation', 'ForEachHandler', 'ForEachReducer', 'RepeatCondition', 'StreamingStep', 'StateAction'] as $name) {
            $this->assertTrue(interface_exists('Queuety\\Contracts\\' . $name), $name);
        }
    }

    public function test_a_builder_without_a_connection_builds_but_does_not_dispatch(): void
    {
        $builder = (new WorkflowBuilder('offline'))->then('A')->wait_for_decision()->compensate_with('Undo');
        $steps = $builder->build_steps();
        $this->assertSame(['approved' => 'approved', 'rejected' => 'rejected'], $steps[1]['decision_map']);
        $this->assertSame('Undo', $steps[1]['compensation']);
        $this->expectExceptionMessage('This WorkflowBuilder has no connection');
        $builder->dispatch();
    }

    public function test_step_config_backoff_and_rate_limit_are_read_as_the_plugin_does(): void
    {
        $meta = \Queuety\HandlerMetadata::from_class('MetaConfigStep');
        $this->assertSame([5, 10], $meta['backoff'], 'a list backoff is kept (the plugin empties it: docs/compat.md)');
        $this->assertSame([10, 60], $meta['rate_limit']);
        $this->assertSame(['linear', null, null], [\Queuety\HandlerMetadata::from_class('MetaLinearStep')['backoff'],
            \Queuety\HandlerMetadata::from_class('MetaLinearStep')['concurrency_group'], \Queuety\HandlerMetadata::from_class('MetaLinearStep')['concurrency_limit']]);
    }
}
