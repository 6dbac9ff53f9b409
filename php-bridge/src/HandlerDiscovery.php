<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Attributes\QueuetyHandler;
use Queuety\Attributes\QueuetyStep;
use Queuety\Contracts\Job as JobContract;

/**
 * Finds handler, step and job classes under a PSR-4 directory (the class
 * name is the namespace plus the file's relative path) and registers the
 * ones named by a #[QueuetyHandler] attribute, as the plugin does.
 */
class HandlerDiscovery
{
    /**
     * @return list<array{class: string, type: string, name: string|null, attribute: object|null}>
     * @throws \RuntimeException For a missing directory.
     */
    public function discover(string $directory, string $namespace): array
    {
        if (!is_dir($directory)) {
            throw new \RuntimeException("Directory not found: {$directory}");
        }
        $namespace = rtrim($namespace, '\\') . '\\';
        $paths = [];
        foreach (new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($directory, \FilesystemIterator::SKIP_DOTS)) as $file) {
            if ($file instanceof \SplFileInfo && $file->isFile() && $file->getExtension() === 'php') {
                $paths[] = $file->getPathname();
            }
        }
        sort($paths);
        $found = [];
        foreach ($paths as $path) {
            $relative = substr($path, strlen(rtrim($directory, DIRECTORY_SEPARATOR)) + 1);
            $class = $namespace . str_replace([DIRECTORY_SEPARATOR, '.php'], ['\\', ''], $relative);
            if (!class_exists($class)) {
                continue;
            }
            $r = new \ReflectionClass($class);
            if ($r->isAbstract() || $r->isInterface()) {
                continue;
            }
            $is_handler = $r->implementsInterface(Handler::class);
            $is_step = $r->implementsInterface(Step::class);
            $is_job = $r->implementsInterface(JobContract::class);
            if (!$is_handler && !$is_step && !$is_job) {
                continue;
            }
            $entry = ['class' => $class, 'type' => $is_step ? 'step' : ($is_job && !$is_handler ? 'job' : 'handler'), 'name' => null, 'attribute' => null];
            if (($attrs = $r->getAttributes(QueuetyHandler::class)) !== []) {
                $entry['attribute'] = $attrs[0]->newInstance();
                $entry['name'] = $entry['attribute']->name;
            }
            if (($attrs = $r->getAttributes(QueuetyStep::class)) !== []) {
                $entry['attribute'] = $attrs[0]->newInstance();
            }
            $found[] = $entry;
        }
        return $found;
    }

    /** Register the discovered classes that have a name; how many. */
    public function register_all(string $directory, string $namespace, HandlerRegistry $registry): int
    {
        $count = 0;
        foreach ($this->discover($directory, $namespace) as $entry) {
            if ($entry['name'] !== null) {
                $registry->register($entry['name'], $entry['class']);
                $count++;
            }
        }
        return $count;
    }
}
