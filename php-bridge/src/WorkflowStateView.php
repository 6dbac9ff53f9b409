<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Readings of a decoded workflow state that the status needs: the public
 * part, trimmed reserved strings, and the budget summary, computed as the
 * plugin computes them.
 *
 * @internal
 */
final class WorkflowStateView
{
    private const BUDGETS = ['max_transitions', 'max_for_each_items', 'max_state_bytes', 'max_cost_units', 'max_started_workflows'];

    /**
     * Every key that does not start with "_".
     *
     * @param array<mixed> $state
     * @return array<string, mixed>
     */
    public static function public_state(array $state): array
    {
        return array_filter($state, static fn (int|string $key): bool => !str_starts_with((string) $key, '_'), ARRAY_FILTER_USE_KEY);
    }

    /**
     * @param array<mixed> $state
     */
    public static function trimmed(array $state, string $key): ?string
    {
        $value = $state[$key] ?? null;
        if (!is_string($value)) {
            return null;
        }
        $value = trim($value);
        return $value === '' ? null : $value;
    }

    /**
     * The positive limits plus the counters and the public state's size,
     * or null without a budget.
     *
     * @param array<mixed> $state
     * @return array<string, int>|null
     */
    public static function budget(array $state): ?array
    {
        $limits = is_array($state['_workflow_budget'] ?? null) ? $state['_workflow_budget'] : [];
        $summary = [];
        foreach (self::BUDGETS as $name) {
            $limit = self::int($limits[$name] ?? 0);
            if ($limit > 0) {
                $summary[$name] = $limit;
            }
        }
        if ($summary === []) {
            return null;
        }
        $counters = is_array($state['_workflow_counters'] ?? null) ? $state['_workflow_counters'] : [];
        foreach (['transitions', 'cost_units', 'started_workflows'] as $name) {
            $summary[$name] = self::int($counters[$name] ?? 0);
        }
        $summary['public_state_bytes'] = strlen(json_encode(self::public_state($state), JSON_THROW_ON_ERROR));
        return $summary;
    }

    private static function int(mixed $value): int
    {
        return is_scalar($value) ? (int) $value : 0;
    }
}
