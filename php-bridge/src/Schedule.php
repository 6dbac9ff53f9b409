<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;

/**
 * One row of the schedules table, with the plugin's Schedule properties.
 */
final class Schedule
{
    /**
     * @param array<mixed> $payload
     */
    public function __construct(
        public readonly int $id,
        public readonly string $handler,
        public readonly array $payload,
        public readonly string $queue,
        public readonly string $expression,
        public readonly ExpressionType $expression_type,
        public readonly ?\DateTimeImmutable $last_run,
        public readonly \DateTimeImmutable $next_run,
        public readonly bool $enabled,
        public readonly \DateTimeImmutable $created_at,
        public readonly OverlapPolicy $overlap_policy = OverlapPolicy::Allow,
    ) {
    }

    /**
     * A row as PDO returns it. The payload is read as the plugin reads it:
     * anything but a JSON array or object is an empty payload.
     *
     * @param array<string, mixed> $row
     */
    public static function from_row(array $row): self
    {
        $utc = new \DateTimeZone('UTC');
        $time = static fn (mixed $v): ?\DateTimeImmutable => is_string($v) && $v !== '' ? new \DateTimeImmutable($v, $utc) : null;
        $payload = is_string($row['payload'] ?? null) ? json_decode($row['payload'], true) : null;
        return new self(
            id: (int) ($row['id'] ?? 0),
            handler: (string) ($row['handler'] ?? ''),
            payload: is_array($payload) ? $payload : [],
            queue: (string) ($row['queue'] ?? 'default'),
            expression: (string) ($row['expression'] ?? ''),
            expression_type: ExpressionType::from((string) ($row['expression_type'] ?? '')),
            last_run: $time($row['last_run'] ?? null),
            next_run: $time($row['next_run'] ?? null) ?? new \DateTimeImmutable('now', $utc),
            enabled: (bool) ($row['enabled'] ?? false),
            created_at: $time($row['created_at'] ?? null) ?? new \DateTimeImmutable('now', $utc),
            overlap_policy: OverlapPolicy::tryFrom((string) ($row['overlap_policy'] ?? '')) ?? OverlapPolicy::Allow,
        );
    }
}
