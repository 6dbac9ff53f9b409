<?php
/**
 * The test application for the PHP pool: each handler plays one behaviour
 * the pool must survive. Loaded by bin/queuety-php-worker --bootstrap.
 */

declare(strict_types=1);

use Queuety\Bridge\Handlers;
use Queuety\Bridge\JobContext;
use Queuety\Heartbeat;

// Noise before the ready frame must not matter either.
echo "booting the phppool test app\n";

Handlers::register('ok', static function (array $payload): void {
});

Handlers::register('echoes', static function (array $payload): void {
    echo "noise on stdout via echo\n";
    printf("printf noise %d\n", 42);
    fwrite(STDOUT, "noise written straight to fd 1\n");
    fwrite(STDERR, "noise on stderr\n");
    // Bytes that look like a frame header, then no newline.
    echo "\x00\x00\x00\x05{\"type\":\"result\"}";
});

Handlers::register('throws', static function (array $payload): void {
    throw new RuntimeException($payload['message'] ?? 'boom');
});

Handlers::register('exits', static function (array $payload): void {
    exit(3);
});

// Leaves a background child holding fd 3 open, then dies: the pool must
// notice the death without the pipe's end of file.
Handlers::register('detaches', static function (array $payload): void {
    shell_exec('sleep 30 > /dev/null 2>&1 &');
    exit(3);
});

Handlers::register('segfaults', static function (array $payload): void {
    segfault();
});

// Crashes (payload "how": exit or segfault) on attempt 1 only, so a retry
// in a fresh process succeeds.
Handlers::register('crash_once', static function (array $payload, JobContext $job): void {
    if ($job->attempt > 1) {
        return;
    }
    if (($payload['how'] ?? 'exit') === 'segfault') {
        segfault();
    }
    exit(3);
});

// Sleeps payload "ms" milliseconds in 50 ms steps, beating after each.
Handlers::register('sleeps', static function (array $payload): void {
    $ms = (int) ($payload['ms'] ?? 100);
    for ($slept = 0; $slept < $ms; $slept += 50) {
        usleep(min(50, $ms - $slept) * 1000);
        Heartbeat::beat(['slept' => min($slept + 50, $ms), 'of' => $ms]);
    }
});

// Keeps payload "mb" MiB allocated, so the process reports it and is recycled.
Handlers::register('memory', static function (array $payload): void {
    static $hog = [];
    $hog[] = str_repeat('x', ((int) ($payload['mb'] ?? 64)) << 20);
});

// Grows to payload "mb" MiB (default 1,536) in 16 MiB steps with no PHP
// memory_limit: only the pool's limit can stop it.
Handlers::register('grows', static function (array $payload): void {
    ini_set('memory_limit', '-1');
    $hog = [];
    for ($mb = 0; $mb < (int) ($payload['mb'] ?? 1536); $mb += 16) {
        $hog[] = str_repeat('y', 16 << 20);
    }
});

// Leaves a pcntl_fork child and a shell background job sleeping, writes
// their pids to payload "pidfile", and returns: they must not outlive the
// pool.
Handlers::register('forks', static function (array $payload): void {
    $child = pcntl_fork();
    if ($child === 0) {
        sleep(60);
        posix_kill(getmypid(), 9); // no shutdown code in the copy
    }
    $shell = trim((string) shell_exec('sleep 60 > /dev/null 2>&1 & echo $!'));
    file_put_contents($payload['pidfile'], $child . ' ' . $shell);
});

// Reports which process ran it: the pid goes into an exception message.
Handlers::register('whoami', static function (array $payload): void {
    throw new RuntimeException((string) getmypid());
});

function segfault(): void
{
    if (function_exists('posix_kill')) {
        posix_kill(getmypid(), 11); // SIGSEGV
        sleep(5); // the signal is asynchronous
    }
    // Without ext-posix there is no portable way to die by a signal.
    fwrite(STDERR, "ext-posix missing: exiting instead of segfaulting\n");
    exit(139);
}

final class GreetHandler implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        fwrite(STDERR, 'hello ' . ($payload['name'] ?? 'nobody') . "\n");
    }

    public function config(): array
    {
        return [];
    }
}

final class DoubleStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        return ['doubled' => 2 * (int) ($state['n'] ?? 0)];
    }

    public function config(): array
    {
        return [];
    }
}

// Workflow steps, run through "step" and "item" requests.

final class AddStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        return [
            'n' => (int) ($state['n'] ?? 0) + 1,
            'added_by' => 'php',
            // The full state reaches the step, reserved keys included.
            'saw_steps' => isset($state['_steps']),
        ];
    }

    public function config(): array
    {
        return [];
    }
}

final class EmptyStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        echo "a step printing to stdout\n";
        return [];
    }

    public function config(): array
    {
        return [];
    }
}

final class ThrowStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        throw new DomainException('step failed at n=' . ($state['n'] ?? '?'));
    }

    public function config(): array
    {
        return [];
    }
}

final class ExitStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        exit(3);
    }

    public function config(): array
    {
        return [];
    }
}

// Dies on attempt 1 only, so the retry in a fresh process succeeds.
final class CrashOnceStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        if ((Queuety\Bridge\JobContext::current()?->attempt ?? 1) <= 1) {
            exit(3);
        }
        return ['recovered' => true];
    }

    public function config(): array
    {
        return [];
    }
}

final class SquareItem implements Queuety\Contracts\ForEachHandler
{
    public function handle_item(array $state, mixed $item, int $index): array
    {
        return ['square' => $item * $item, 'index' => $index, 'base' => $state['base'] ?? null];
    }

    public function config(): array
    {
        return [];
    }
}

final class BranchA implements Queuety\Step
{
    public function handle(array $state): array
    {
        return ['a' => 'from A', 'n_seen_by_a' => $state['n'] ?? null];
    }

    public function config(): array
    {
        return [];
    }
}

final class BranchB implements Queuety\Step
{
    public function handle(array $state): array
    {
        return ['b' => 'from B'];
    }

    public function config(): array
    {
        return [];
    }
}

// Workflow callables, run through "reducer", "condition" and
// "compensation" requests.

// Sums the squares of a for_each aggregate; the payload, when given,
// becomes a label.
final class SumSquaresReducer implements Queuety\Contracts\ForEachReducer
{
    public function reduce(array $state, array $for_each, array $payload = []): array
    {
        $sum = 0;
        foreach ($for_each['results'] ?? [] as $result) {
            $sum += (int) ($result['output']['square'] ?? 0);
        }
        $out = ['sum' => $sum, 'reducer_saw_squares' => isset($state['squares']), 'reducer_saw_reserved' => isset($state['_steps'])];
        if ($payload !== []) {
            $out['label'] = $payload['label'] ?? null;
        }
        return $out;
    }
}

final class ThrowingReducer implements Queuety\Contracts\ForEachReducer
{
    public function reduce(array $state, array $for_each): array
    {
        throw new LogicException('reducer failed');
    }
}

// Matches once state "n" reached the payload's "at" (default 3).
final class ReachedCondition implements Queuety\Contracts\RepeatCondition
{
    public function matches(array $state, array $payload = []): bool
    {
        return (int) ($state['n'] ?? 0) >= (int) ($payload['at'] ?? 3);
    }
}

final class ThrowingCondition implements Queuety\Contracts\RepeatCondition
{
    public function matches(array $state): bool
    {
        throw new UnexpectedValueException('condition failed');
    }
}

// Has matches() but not the contract: the plugin refuses it.
final class DuckCondition
{
    public function matches(array $state): bool
    {
        return true;
    }
}

// Writes what it was called with to the file named by the payload's
// "marker" (or the state's "marker"), one JSON line per call.
final class MarkerCompensation implements Queuety\Contracts\Compensation
{
    public function handle(array $state, array $payload = []): void
    {
        $file = $payload['marker'] ?? $state['marker'] ?? null;
        if (!is_string($file) || $file === '') {
            throw new InvalidArgumentException('no marker file');
        }
        file_put_contents($file, json_encode(['class' => self::class, 'state' => $state, 'payload' => $payload]) . "\n", FILE_APPEND);
    }
}

final class ThrowingCompensation implements Queuety\Contracts\Compensation
{
    public function handle(array $state): void
    {
        throw new RuntimeException('compensation failed');
    }
}

// Neither a Compensation nor anything with handle().
final class NotACompensation
{
}

Handlers::register('sum_reducer', SumSquaresReducer::class);
Handlers::register('n_is_even', static fn (array $state): bool => ((int) ($state['n'] ?? 0)) % 2 === 0);

// A step class whose config() the pool reports (metadata_test.go).
#[Queuety\Attributes\QueuetyStep(max_attempts: 4)]
final class ConfiguredMetaStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        return [];
    }

    public function config(): array
    {
        return ['queue' => 'llm', 'backoff' => [5, 30], 'rate_limit' => [10, 60],
            'concurrency_group' => 'provider', 'concurrency_limit' => 2, 'cost_units' => 3];
    }
}

Handlers::register('configured_meta', ConfiguredMetaStep::class);

// A step that reports progress with Heartbeat::beat(), as a long step
// would (step_heartbeat_e2e_test.go).
final class BeatStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        Heartbeat::beat(['processed' => 1, 'of' => 2]);
        Heartbeat::beat(['processed' => 2, 'of' => 2]);
        return ['beaten' => true];
    }

    public function config(): array
    {
        return [];
    }
}

// A Contracts\Job whose $timeout is above the daemon's job timeout: the
// plugin's worker lets $timeout replace the global limit
// (time_limit_test.go).
final class LongTimeoutJob implements Queuety\Contracts\Job
{
    public int $timeout = 30;
    public int $tries = 1;

    public function __construct(public int $ms = 0)
    {
    }

    public function handle(): void
    {
        usleep($this->ms * 1000);
    }
}

// A Contracts\Job whose $tries and $backoff differ from its row's: the
// stale sweep and `recover` go by them (stale_classes_test.go).
final class StaleBackoffJob implements Queuety\Contracts\Job
{
    public int $tries = 5;
    public array $backoff = [45, 90];

    public function handle(): void
    {
    }
}

// The step of the class-settings load test (class_settings_load_test.go):
// the parity review's StepB, 7 attempts, group llm/1, cost 5.
final class LoadConfiguredStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        return ['loaded' => true];
    }

    public function config(): array
    {
        return ['queue' => 'llm', 'max_attempts' => 7, 'concurrency_group' => 'llm', 'concurrency_limit' => 1, 'cost_units' => 5];
    }
}

// An autoloader that throws for BrokenAutoload* names: PHP's answer to a
// settings read of such a class is an exception (metadata_test.go). (A
// config() that throws is swallowed by HandlerMetadata::from_class, as by
// the plugin's: the class then has no settings.)
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'BrokenAutoload')) {
        throw new \LogicException('the autoloader is broken');
    }
});

// Handler classes that throw, whose config() retry settings differ from
// their rows': the worker goes by the class, as the plugin's
// resolve_handler_retry_settings (class_retry_test.go).
final class FailsOnceAllowedHandler implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        throw new RuntimeException('fails once allowed');
    }

    public function config(): array
    {
        return ['max_attempts' => 1];
    }
}

final class FailsTwiceAllowedHandler implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        throw new RuntimeException('fails twice allowed');
    }

    public function config(): array
    {
        return ['max_attempts' => 2, 'backoff' => [0]];
    }
}
