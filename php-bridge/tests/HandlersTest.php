<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Bridge\Handlers;
use Queuety\Bridge\JobContext;
use Queuety\Enums\Priority;
use Queuety\Handler;
use Queuety\Queuety;

/**
 * Handler names resolve as in the plugin: a registration, else a class.
 */
final class HandlersTest extends TestCase
{
    protected function tearDown(): void
    {
        Handlers::reset();
    }

    public function test_resolution(): void
    {
        $job = new JobContext(1, 'x', 'default', 1, 3, Priority::Low);
        Handlers::register('closure', static fn (array $p): array => ['got' => $p]);
        $this->assertSame(['got' => ['a' => 1]], Handlers::resolve('closure')(['a' => 1], $job));

        RecordingHandler::$seen = [];
        Queuety::register('by_alias', RecordingHandler::class);
        $this->assertNull(Handlers::resolve('by_alias')(['b' => 2], $job));
        $this->assertNull(Handlers::resolve(RecordingHandler::class)(['c' => 3], $job));
        $this->assertSame([['b' => 2], ['c' => 3]], RecordingHandler::$seen);
        $this->assertSame(2, RecordingHandler::$instances, 'a fresh instance per job, as the plugin');

        $this->assertSame(RecordingHandler::class, Handlers::class_name('by_alias'));
        $this->assertNull(Handlers::class_name('closure'));
        $this->assertTrue(Handlers::has('closure'));
        $this->assertFalse(Handlers::has('nope'));
    }

    public function test_unknown_names_fail_with_queuetys_message(): void
    {
        $this->expectException(\RuntimeException::class);
        $this->expectExceptionMessage('Handler not found: strlen');
        Handlers::resolve('strlen'); // a PHP function, but never registered
    }

    public function test_a_resolved_class_answers_to_its_attribute_name(): void
    {
        $job = new JobContext(1, 'x', 'default', 1, 3, Priority::Low);
        $this->assertFalse(Handlers::has('greet'), 'not known before its class is resolved');
        Handlers::resolve(\Queuety\Tests\Discover\Greeter::class);
        $this->assertTrue(Handlers::has('greet'));
        $this->assertSame(\Queuety\Tests\Discover\Greeter::class, Handlers::class_name('greet'));
        $this->assertNull(Handlers::resolve('greet')([], $job));

        // A name already taken keeps its registration, as the plugin's.
        Handlers::reset();
        Handlers::register('greet', RecordingHandler::class);
        $this->assertSame(\Queuety\Tests\Discover\Greeter::class, Handlers::class_name(\Queuety\Tests\Discover\Greeter::class));
        $this->assertSame(RecordingHandler::class, Handlers::class_name('greet'));
    }

    public function test_a_class_must_be_a_handler_or_step(): void
    {
        $this->expectExceptionMessage('Class ArrayObject must implement Handler or Step.');
        Handlers::resolve(\ArrayObject::class)([], new JobContext(1, 'x', 'default', 1, 3, Priority::Low));
    }
}

final class RecordingHandler implements Handler
{
    /** @var list<array<mixed>> */
    public static array $seen = [];
    public static int $instances = 0;

    public function __construct()
    {
        self::$instances++;
    }

    public function handle(array $payload): void
    {
        self::$seen[] = $payload;
    }

    public function config(): array
    {
        return [];
    }
}
