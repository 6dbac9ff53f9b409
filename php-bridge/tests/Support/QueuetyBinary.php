<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

/**
 * The queuety Go binary, built from this repository once per run by the
 * bootstrap (QUEUETY_BIN points at a prebuilt one instead). The path is
 * exported as QUEUETY_BIN, so tests PHPUnit runs in separate processes do
 * not build it again.
 */
final class QueuetyBinary
{
    private static ?string $path = null;

    public static function build(): void
    {
        $prebuilt = getenv('QUEUETY_BIN');
        if (is_string($prebuilt) && $prebuilt !== '') {
            self::$path = $prebuilt;
            return;
        }
        $dir = sys_get_temp_dir() . '/qtphp-bin-' . getmypid();
        @mkdir($dir, 0o700, true);
        self::$path = $dir . '/queuety';
        $root = dirname(__DIR__, 3);
        self::run(['go', 'build', '-o', self::$path, './cmd/queuety'], $root);
        putenv('QUEUETY_BIN=' . self::$path);
        register_shutdown_function(static function () use ($dir): void {
            @unlink($dir . '/queuety');
            @rmdir($dir);
        });
    }

    /**
     * Run the binary; returns its output, throws on failure.
     *
     * @param list<string> $args
     */
    public static function exec(array $args): string
    {
        if (self::$path === null) {
            self::build();
        }
        return self::run(array_merge([self::$path], $args));
    }

    /**
     * @param list<string> $command
     */
    private static function run(array $command, ?string $cwd = null): string
    {
        $proc = proc_open($command, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $cwd);
        if (!is_resource($proc)) {
            throw new \RuntimeException('cannot run ' . $command[0]);
        }
        $out = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $code = proc_close($proc);
        if ($code !== 0) {
            throw new \RuntimeException(implode(' ', $command) . " exited {$code}:\n{$out}");
        }
        return $out;
    }
}
