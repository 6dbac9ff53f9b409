<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Queuety;

/**
 * Without the plugin the facade's state machine calls say where state
 * machines work instead of dying on an undefined method.
 */
final class MachineFacadeTest extends TestCase
{
    public function test_machine_calls_name_where_they_work(): void
    {
        foreach ([
            'machine_event' => static fn () => Queuety::machine_event(1, 'submit', ['approved' => true]),
            'machine' => static fn () => Queuety::machine('review'),
            'machine_status' => static fn () => Queuety::machine_status(1),
            'list_machines' => static fn () => Queuety::list_machines(),
            'dispatch_state_machine_definition' => static fn () => Queuety::dispatch_state_machine_definition([]),
        ] as $method => $call) {
            try {
                $call();
                $this->fail("Queuety::{$method}() returned");
            } catch (\LogicException $e) {
                $this->assertStringContainsString("Queuety::{$method}() needs the Queuety plugin", $e->getMessage());
                $this->assertStringContainsString('queuety machine', $e->getMessage());
            }
        }
    }
}
