<?php
/**
 * PHPUnit bootstrap: the bridge's autoloader (no Composer needed) and the
 * test support classes (Support\QueuetyBinary builds the queuety binary
 * the tests migrate their databases with, so they run on the real schema).
 */

declare(strict_types=1);

require dirname(__DIR__) . '/autoload.php';

spl_autoload_register(static function (string $class): void {
    $prefix = 'Queuety\\Tests\\';
    if (str_starts_with($class, $prefix)) {
        require __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    }
});

Queuety\Tests\Support\QueuetyBinary::build();
