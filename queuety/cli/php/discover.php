<?php
/**
 * queuety discover: lists the handler, step and job classes under a
 * directory as Queuety's HandlerDiscovery finds them, and prints them as
 * JSON. Arguments: <directory> <namespace> [bootstrap files...].
 *
 * The classes are loaded by the bootstrap files (the application's, or
 * php-bridge/autoload.php) and, failing that, by a PSR-4 loader of
 * <namespace> from <directory>. No WordPress and no database are needed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

declare(strict_types=1);

[, $directory, $namespace] = $argv + [null, '', ''];
foreach (array_slice($argv, 3) as $bootstrap) {
    require $bootstrap;
}

$fail = static function (string $message): never {
    file_put_contents('php://stderr', $message . "\n"); // STDERR is not defined for a script read from stdin
    exit(2);
};

if (!is_dir($directory)) {
    $fail("Directory not found: {$directory}");
}
$directory = rtrim($directory, DIRECTORY_SEPARATOR);
$prefix = rtrim($namespace, '\\') . '\\';

spl_autoload_register(static function (string $class) use ($directory, $prefix): void {
    if (!str_starts_with($class, $prefix)) {
        return;
    }
    $file = $directory . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require_once $file;
    }
});

// Without Queuety's classes (no bootstrap), empty stand-ins of its three
// contracts let the classes that only implement them load; a class that
// needs more of Queuety fails to load, and the error says to bootstrap.
foreach (['Queuety\\Handler', 'Queuety\\Step', 'Queuety\\Contracts\\Job'] as $contract) {
    if (!interface_exists($contract)) {
        $at = strrpos($contract, '\\');
        eval('namespace ' . substr($contract, 0, $at) . '; interface ' . substr($contract, $at + 1) . ' {}');
    }
}

$files = [];
$walk = new RecursiveIteratorIterator(new RecursiveDirectoryIterator($directory, FilesystemIterator::SKIP_DOTS));
foreach ($walk as $file) {
    if ($file instanceof SplFileInfo && $file->isFile() && $file->getExtension() === 'php') {
        $files[] = $file->getPathname();
    }
}
sort($files); // the same order on every file system

$found = [];
foreach ($files as $path) {
    $relative = substr($path, strlen($directory) + 1, -strlen('.php'));
    $class = $prefix . str_replace(DIRECTORY_SEPARATOR, '\\', $relative);
    if (!class_exists($class)) {
        continue;
    }
    $ref = new ReflectionClass($class);
    if ($ref->isAbstract() || $ref->isInterface()) {
        continue;
    }
    $isHandler = $ref->implementsInterface('Queuety\\Handler');
    $isStep = $ref->implementsInterface('Queuety\\Step');
    $isJob = $ref->implementsInterface('Queuety\\Contracts\\Job');
    if (!$isHandler && !$isStep && !$isJob) {
        continue;
    }
    $type = $isStep ? 'step' : (($isJob && !$isHandler) ? 'job' : 'handler');
    $name = null;
    // The attribute's arguments, so its class need not be loadable.
    $attrs = $ref->getAttributes('Queuety\\Attributes\\QueuetyHandler');
    if ($attrs !== []) {
        $args = $attrs[0]->getArguments();
        $name = $args['name'] ?? $args[0] ?? null;
    }
    $found[] = ['class' => $class, 'type' => $type, 'name' => $name];
}

echo json_encode($found, JSON_UNESCAPED_SLASHES), "\n";
