<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Tests\Support\WorkerProcess;

/**
 * The worker script speaks the pool protocol: ready, then one result per
 * run request, heartbeats in between, output kept off fd 3.
 */
final class WorkerProtocolTest extends TestCase
{
    private WorkerProcess $worker;

    protected function setUp(): void
    {
        $this->worker = new WorkerProcess(['--bootstrap', __DIR__ . '/fixtures/worker-app.php']);
        $ready = $this->worker->read();
        $this->assertSame('ready', $ready['type']);
        $this->assertSame(1, $ready['protocol']);
        $this->assertIsInt($ready['pid']);
        $this->assertSame(PHP_VERSION, $ready['php']);
    }

    protected function tearDown(): void
    {
        if (isset($this->worker)) {
            $this->worker->finish();
        }
    }

    public function test_results(): void
    {
        $seq = $this->worker->run('noop');
        $result = $this->worker->read();
        $this->assertSame(['type' => 'result', 'seq' => $seq, 'ok' => true], array_diff_key($result, ['memory' => 0, 'memory_peak_kb' => 0]));
        $this->assertGreaterThan(0, $result['memory'], 'memory_get_usage(true)');
        $this->assertSame(intdiv(memory_get_peak_usage(true), 1024) > 0, $result['memory_peak_kb'] > 0, 'memory_get_peak_usage(true) / 1024, logged as memory_peak_kb');
        $this->assertGreaterThanOrEqual(intdiv($result['memory'], 1024), $result['memory_peak_kb'], 'the peak is at least the usage');

        $this->worker->run('double', ['n' => 21]);
        $this->assertSame(['n' => 42], $this->worker->read()['output'], "a Step's output");
    }

    public function test_workflow_steps_get_the_state_and_return_their_output(): void
    {
        $seq = $this->worker->run_step('double', ['n' => 4, '_current_step' => 0]);
        $result = $this->worker->read();
        $this->assertSame($seq, $result['seq']);
        $this->assertTrue($result['ok']);
        $this->assertSame(['n' => 8], $result['output'], "Step::handle with the full state");

        $this->worker->run_step('PairItem', ['_run' => 'r1'], ['x', 2]);
        $this->assertSame(['pair' => [2, 'x'], 'run' => 'r1'], $this->worker->read()['output'], 'ForEachHandler::handle_item(state, item, index)');

        $this->worker->run_step('DoubleState', ['n' => 1], ['ignored', 0]);
        $this->assertSame(['n' => 2], $this->worker->read()['output'], 'a plain Step runs handle() for an item');

        $this->worker->run_step('nope', []);
        $this->assertSame('Handler not found: nope', $this->worker->read()['error']['message']);
    }

    public function test_metadata_requests_answer_with_the_class_settings(): void
    {
        $seq = $this->worker->metadata('limited');
        $result = $this->worker->read();
        $this->assertSame($seq, $result['seq']);
        $this->assertTrue($result['ok']);
        $this->assertSame(['queue' => 'llm', 'max_attempts' => 5, 'backoff' => [5, 0, 30], 'rate_limit' => [2, 3],
            'concurrency_group' => 'provider', 'concurrency_limit' => 2, 'cost_units' => 3], $result['output'], 'a registered name answers for its class');

        $this->worker->metadata('AttributeOnlyStep');
        $this->assertSame(['queue' => null, 'max_attempts' => 4, 'backoff' => 'linear', 'rate_limit' => null,
            'concurrency_group' => null, 'concurrency_limit' => null, 'cost_units' => null], $this->worker->read()['output']);

        $this->worker->metadata('NoSuchClass');
        $this->assertSame(['queue' => null, 'max_attempts' => null, 'backoff' => null, 'rate_limit' => null,
            'concurrency_group' => null, 'concurrency_limit' => null, 'cost_units' => null], $this->worker->read()['output'], 'an unknown class has none');

        $this->worker->run('noop');
        $this->assertTrue($this->worker->read()['ok'], 'jobs still run after metadata requests');
    }

    public function test_handlers_see_the_job(): void
    {
        $this->worker->run('context', ['k' => 'v'], 2);
        $this->assertSame([
            'id' => 101, 'attempt' => 2, 'queue' => 'mail', 'priority' => 'High', 'payload' => ['k' => 'v'],
            'current' => true, 'heartbeat_job' => 101,
        ], $this->worker->read()['output']);
    }

    public function test_failures_carry_class_message_and_trace(): void
    {
        $this->worker->run('throws');
        $error = $this->worker->read()['error'];
        $this->assertSame('DomainException', $error['class']);
        $this->assertSame("bad \u{FFFD} byte", $error['message'], 'invalid UTF-8 substituted, the frame still sent');
        $this->assertStringStartsWith('#0 ', $error['trace']);

        $this->worker->run('nope');
        $result = $this->worker->read();
        $this->assertFalse($result['ok']);
        $this->assertSame(['RuntimeException', 'Handler not found: nope'], [$result['error']['class'], $result['error']['message']]);

        $this->worker->run('count');
        $this->assertTrue($this->worker->read()['ok'], 'a built-in callable gets the payload alone');

        $this->worker->run('nan');
        $result = $this->worker->read();
        $this->assertSame('JsonException', $result['error']['class'], 'output JSON cannot carry fails the job, not the protocol');
        $this->worker->run('noop');
        $this->assertTrue($this->worker->read()['ok']);
    }

    public function test_heartbeats_come_before_the_result_with_phps_bytes(): void
    {
        $seq = $this->worker->run('beats');
        $this->assertSame('{"type":"heartbeat","seq":' . $seq . ',"progress":{"processed":1,"path":"a\/b"}}', $this->worker->read_raw(),
            'json_encode default flags, as Heartbeat::beat() stores heartbeat_data');
        $this->assertSame(['type' => 'heartbeat', 'seq' => $seq, 'progress' => []], $this->worker->read());
        $this->assertSame('result', $this->worker->read()['type']);
    }

    public function test_output_never_reaches_fd_3(): void
    {
        $this->worker->run('noisy');
        $this->assertTrue($this->worker->read()['ok']);
        $this->worker->run('noop');
        $this->assertTrue($this->worker->read()['ok']);
        $end = $this->worker->finish();
        unset($this->worker);
        $this->assertSame(0, $end['code'], 'a closed stdin ends the worker cleanly');
        $this->assertSame("to fd 1\n", $end['stdout']);
        $this->assertStringContainsString("echoed\n", $end['stderr'], 'captured output goes to stderr');
        $this->assertStringContainsString("to fd 2\n", $end['stderr']);
        $this->assertStringContainsString('inside a buffer the handler never closed', $end['stderr']);
    }

    public function test_the_command_line_is_checked(): void
    {
        foreach ([
            [[], '--bootstrap is required'],
            [['--bootstrap', '/nonexistent.php'], '--bootstrap /nonexistent.php: no such readable file'],
            [['--bogus'], 'unknown argument --bogus'],
        ] as [$args, $message]) {
            $w = new WorkerProcess($args);
            $end = $w->finish();
            $this->assertSame(2, $end['code']);
            $this->assertStringContainsString($message, $end['stderr']);
        }
        $help = (new WorkerProcess(['--help']))->finish();
        $this->assertSame(0, $help['code']);
        $this->assertStringContainsString('usage: queuety-php-worker --bootstrap app.php', $help['stdout']);
    }

    public function test_without_fd_3_it_says_how_to_run_it(): void
    {
        // fd 3 read-only stands for "not the daemon's pipe": an inherited
        // descriptor may be open, so its absence cannot be arranged.
        $proc = proc_open([PHP_BINARY, dirname(__DIR__) . '/bin/queuety-php-worker', '--bootstrap', __DIR__ . '/fixtures/worker-app.php'],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w'], 3 => ['file', '/dev/null', 'r']], $pipes);
        fclose($pipes[0]);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $this->assertSame(2, proc_close($proc));
        $this->assertStringContainsString('file descriptor 3, which is not open for writing', (string) $stderr);
    }
}
