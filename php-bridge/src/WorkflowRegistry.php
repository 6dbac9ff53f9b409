<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Workflow templates registered in this process by name
 * (Queuety::register_workflow_template(), load_workflows()).
 */
class WorkflowRegistry
{
    /** @var array<string, WorkflowTemplate> */
    private array $templates = [];

    public function register(string $name, WorkflowTemplate $template): void
    {
        $this->templates[$name] = $template;
    }

    public function get(string $name): ?WorkflowTemplate
    {
        return $this->templates[$name] ?? null;
    }

    public function has(string $name): bool
    {
        return isset($this->templates[$name]);
    }

    /** @return array<string, WorkflowTemplate> */
    public function all(): array
    {
        return $this->templates;
    }
}
