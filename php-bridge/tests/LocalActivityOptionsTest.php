<?php

declare(strict_types=1);

namespace Queuety\Tests;

use InvalidArgumentException;
use PHPUnit\Framework\TestCase;
use Queuety\LocalActivityOptions;
use Queuety\WorkflowBuilder;

/**
 * Local activity steps (seed 002): the options snapshot and the step are
 * byte for byte what the Go builder writes (workflow/local_activity_test.go
 * pins the same strings), and routing options are refused with the
 * library's message.
 */
final class LocalActivityOptionsTest extends TestCase
{
    public function test_the_seed_options_snapshot_matches_the_go_builder(): void
    {
        $options = new LocalActivityOptions(maxAttempts: 3, startToCloseTimeout: 10, scheduleToCloseTimeout: 30, heartbeatTimeout: 5);
        self::assertSame(
            '{"execution_mode":"local","queue_bypassed":true,"routing":"same_process_workflow_task","max_attempts":3,"backoff":null,"start_to_close_timeout":10,"schedule_to_close_timeout":30,"heartbeat_timeout":5,"non_retryable_error_types":[]}',
            json_encode($options->snapshot()),
        );
    }

    public function test_the_step_matches_the_go_builder(): void
    {
        $steps = (new WorkflowBuilder('x'))
            ->local_activity('SendReceiptActivity', new LocalActivityOptions(maxAttempts: 3, backoff: [1, 2]), 'receipt')
            ->build_steps();
        self::assertSame(
            '{"type":"local_activity","name":"receipt","class":"SendReceiptActivity","local_activity":{"execution_mode":"local","queue_bypassed":true,"routing":"same_process_workflow_task","max_attempts":3,"backoff":[1,2],"start_to_close_timeout":null,"schedule_to_close_timeout":null,"heartbeat_timeout":null,"non_retryable_error_types":[]}}',
            json_encode($steps[0]),
        );
        $default = (new WorkflowBuilder('x'))->then('A')->local_activity('B')->build_steps();
        self::assertSame('1', $default[1]['name']);
        self::assertSame(8, count($default[1]['local_activity']) - 1, 'every option key, null when unset');
        self::assertNull($default[1]['local_activity']['max_attempts']);
    }

    public function test_an_int_backoff_is_stored_as_a_list(): void
    {
        self::assertSame([5], (new LocalActivityOptions(backoff: 5))->snapshot()['backoff']);
    }

    public function test_routing_options_are_refused_with_the_librarys_message(): void
    {
        foreach ([['queue' => 'imports'], ['connection' => 'redis'], ['workerSession' => 'gpu'], ['worker_session' => 'gpu'], ['scheduleToStartTimeout' => 5]] as $array) {
            try {
                (new WorkflowBuilder('x'))->local_activity('A', $array);
                self::fail('accepted ' . json_encode($array));
            } catch (InvalidArgumentException $e) {
                self::assertSame('Local activities do not accept connection, queue, worker session, or schedule-to-start routing options.', $e->getMessage());
            }
        }
        $ok = LocalActivityOptions::fromArray(['maxAttempts' => 2, 'non_retryable_error_types' => ['PaymentDeclined']]);
        self::assertSame(2, $ok->maxAttempts);
        self::assertSame(['PaymentDeclined'], $ok->snapshot()['non_retryable_error_types']);
    }

    public function test_values_outside_the_schema_ranges_are_refused(): void
    {
        $cases = [
            static fn () => new LocalActivityOptions(maxAttempts: 0),
            static fn () => new LocalActivityOptions(maxAttempts: 101),
            static fn () => new LocalActivityOptions(startToCloseTimeout: 0),
            static fn () => new LocalActivityOptions(heartbeatTimeout: -1),
            static fn () => new LocalActivityOptions(backoff: [1, -2]),
            static fn () => new LocalActivityOptions(nonRetryableErrorTypes: ['A', 'A']),
            static fn () => new LocalActivityOptions(nonRetryableErrorTypes: [' ']),
        ];
        foreach ($cases as $i => $case) {
            try {
                $case();
                self::fail("case $i accepted");
            } catch (InvalidArgumentException) {
                self::addToAssertionCount(1);
            }
        }
    }
}
