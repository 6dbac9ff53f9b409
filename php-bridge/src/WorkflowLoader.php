<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Registers workflow templates from PHP files that return a
 * WorkflowBuilder (Queuety::define_workflow('name')->then(…)).
 */
final class WorkflowLoader
{
    /**
     * @return int The number of templates registered.
     * @throws \RuntimeException For a missing directory.
     */
    public static function load(string $directory, bool $recursive = false): int
    {
        if (!is_dir($directory)) {
            throw new \RuntimeException("Workflow directory does not exist: {$directory}");
        }
        $files = $recursive
            ? new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($directory, \FilesystemIterator::SKIP_DOTS))
            : new \DirectoryIterator($directory);
        $paths = [];
        foreach ($files as $file) {
            if ($file instanceof \SplFileInfo && !$file->isDir() && $file->getExtension() === 'php' && $file->getRealPath() !== false) {
                $paths[] = $file->getRealPath();
            }
        }
        // Directory order is the file system's: load in name order.
        sort($paths);
        $count = 0;
        foreach ($paths as $path) {
            if (self::load_file($path) !== null) {
                $count++;
            }
        }
        return $count;
    }

    /** The template the file's returned builder registered, or null. */
    public static function load_file(string $file_path): ?WorkflowTemplate
    {
        if (!is_readable($file_path)) {
            return null;
        }
        $result = require $file_path;
        if (!$result instanceof WorkflowBuilder) {
            return null;
        }
        Queuety::register_workflow_template($result);
        return Queuety::workflow_templates()->get($result->get_name());
    }
}
