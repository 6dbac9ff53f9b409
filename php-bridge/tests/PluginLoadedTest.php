<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Tests\Support\WorkerProcess;

/**
 * --wp-load on a site where the plugin is active: the plugin's prepended
 * autoloader makes its Queuety\* classes win (here a stand-in with the
 * plugin's method names: a Heartbeat without bind(), its own facade and
 * HandlerRegistry). Jobs still run, heartbeats and the execution context
 * use the plugin's classes, and aliases registered the plugin's way resolve.
 */
final class PluginLoadedTest extends TestCase
{
    private WorkerProcess $worker;

    protected function setUp(): void
    {
        $this->worker = new WorkerProcess([
            '--wp-load', __DIR__ . '/fixtures/plugin-standin/wp-load.php',
            '--bootstrap', __DIR__ . '/fixtures/plugin-app.php',
        ]);
        $this->assertSame('ready', $this->worker->read()['type']);
    }

    protected function tearDown(): void
    {
        if (isset($this->worker)) {
            $this->worker->finish();
        }
    }

    public function test_a_job_runs_with_the_plugins_heartbeat_and_context(): void
    {
        $this->worker->send([
            'job' => ['id' => 7, 'handler' => 'probe', 'queue' => 'default', 'attempt' => 1, 'max_attempts' => 3, 'priority' => 0, 'workflow_id' => 3, 'step_index' => 1],
            'payload' => [],
        ]);
        $result = $this->worker->read();
        $this->assertTrue($result['ok'], json_encode($result['error'] ?? null) ?: '');
        $this->assertSame([
            'heartbeat_job' => 7,
            'context_job' => 7,
            'workflow' => 3,
            'beats' => [['job' => 7, 'progress' => ['step' => 1]]],
            'heartbeat_file' => 'Heartbeat.php',
            'heartbeat_dir' => 'plugin-standin',
        ], $result['output'], "the plugin's Heartbeat::init and ExecutionContext::enter were used");

        // Set anew for the next job: nothing of the first one is left.
        $this->worker->run('probe');
        $output = $this->worker->read()['output'];
        $this->assertNull($output['workflow'], 'a plain job has no workflow');
        $this->assertSame(['job' => 102, 'progress' => ['step' => 1]], $output['beats'][1]);
    }

    public function test_wp_load_alone_serves_the_plugins_handlers(): void
    {
        // A WordPress site needs no bootstrap of its own: the plugin (here
        // its stand-in) is loaded by wp-load.php and resolves the names.
        $worker = new WorkerProcess(['--wp-load', __DIR__ . '/fixtures/plugin-standin/wp-load.php']);
        $this->assertSame('ready', $worker->read()['type']);
        $worker->run('unknown_alias');
        $this->assertSame('Handler not found: unknown_alias', $worker->read()['error']['message']);
        $worker->run('Queuety\Bridge\Handlers');
        $this->assertFalse($worker->read()['ok'], 'a class that is no handler fails the job, the worker goes on');
        $end = $worker->finish();
        $this->assertSame(0, $end['code'], $end['stderr']);
    }

    public function test_aliases_registered_the_plugins_way_resolve(): void
    {
        $this->worker->run('plugin_alias');
        $this->assertSame(['type' => 'result', 'seq' => 1, 'ok' => true], array_diff_key($this->worker->read(), ['memory' => 0, 'memory_peak_kb' => 0]));

        $this->worker->run('plugin_alias', ['fail' => true]);
        $this->assertSame('alias ran and failed', $this->worker->read()['error']['message']);

        $this->worker->run_step('by_attribute', []);
        $this->assertSame(
            ['via' => 'attribute', '_queuety_trace' => ['context' => ['seen_by' => 'plugin']]],
            $this->worker->read()['output'],
            "#[QueuetyHandler] name from the plugin registry; the trace the plugin's ExecutionContext collected goes with the output",
        );

        $this->worker->run('unknown_alias');
        $this->assertSame('Handler not found: unknown_alias', $this->worker->read()['error']['message']);
    }
}
