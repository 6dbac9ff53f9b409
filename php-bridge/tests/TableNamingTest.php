<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * With custom prefixes, the bridge writes to the tables the daemon
 * created (`queuety migrate --prefix --table-prefix`): both runtimes name
 * tables by spec §1.1.
 */
final class TableNamingTest extends DatabaseTestCase
{
    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_queuety_table_prefix_constant_names_the_daemons_tables(): void
    {
        define('QUEUETY_TABLE_PREFIX', 'themequeue');
        $this->migrate(['--prefix', 'site_', '--table-prefix', 'themequeue']);
        Queuety::init($this->connection('site_'));
        $id = Queuety::dispatch('noop', ['a' => 1])->id();
        $this->assertSame('{"a":1}', $this->job($id, 'site_themequeue_jobs')['payload']);
        Queuety::pause('q');
        $this->assertTrue(Queuety::is_paused('q'), 'site_themequeue_queue_states');
    }

    public function test_connection_table_prefix_names_the_daemons_tables(): void
    {
        $this->migrate(['--prefix', 'b2_', '--table-prefix', 'onumia_queuety']);
        Queuety::init($this->connection('b2_', 'onumia_queuety'));
        $id = Queuety::dispatch('noop')->id();
        $this->assertSame('[]', $this->job($id, 'b2_onumia_queuety_jobs')['payload']);
    }
}
