<?php
/**
 * PSR-4 autoloader for the bridge's classes (Queuety\ => src/), so the
 * worker script and the tests run without Composer. With Composer, its
 * autoloader does the same from composer.json.
 */

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    if (!str_starts_with($class, 'Queuety\\')) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('Queuety\\'))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
