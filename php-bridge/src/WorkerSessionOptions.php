<?php

declare(strict_types=1);

namespace Queuety;

use InvalidArgumentException;

/**
 * durable-workflow's WorkerSessionOptions (seed 000): pins a sequence of
 * steps (or plain jobs) to one worker that holds a local resource. The
 * holder must be registered on `queue` and advertise every requirement;
 * the session is created lazily when its first job is admitted.
 *
 *     $gpu = Queuety::workflow('render')->then(PlanFrames::class)
 *         ->worker_session('gpu-render', new WorkerSessionOptions(
 *             queue: 'gpu-activities',
 *             requirements: ['gpu:nvidia-l4'],
 *             leaseSeconds: 120,
 *             ttlSeconds: 1800,
 *             maxConcurrentActivities: 1,
 *         ));
 *     $gpu->then(RenderFrames::class)->then(AssembleManifest::class);
 *
 * Unset values stay null in the snapshot and the defaults apply when a
 * job is enqueued (lease 120 s, TTL 1800 s, one activity at a time).
 * Messages are the library's; the Go builder (workflow.WorkerSessionOptions)
 * validates and serializes identically.
 */
final class WorkerSessionOptions
{
    public const DEFAULT_LEASE_SECONDS = 120;
    public const DEFAULT_TTL_SECONDS = 1800;
    public const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 1;

    public readonly ?string $sessionId;
    public readonly ?string $connection;
    public readonly ?string $queue;
    /** @var list<string> */
    public readonly array $requirements;
    public readonly ?int $leaseSeconds;
    public readonly ?int $ttlSeconds;
    public readonly ?int $maxConcurrentActivities;

    /**
     * Checked in the library's order (session id, connection, queue,
     * requirements, the integers); the first violation throws.
     *
     * @param array<mixed> $requirements Capabilities the holder must advertise.
     * @throws InvalidArgumentException
     */
    public function __construct(
        ?string $queue = null,
        array $requirements = [],
        ?int $leaseSeconds = null,
        ?int $ttlSeconds = null,
        ?int $maxConcurrentActivities = null,
        ?string $connection = null,
        public readonly bool $createIfMissing = true,
        public readonly bool $allowReacquireAfterFailure = true,
        ?string $sessionId = null,
    ) {
        $this->sessionId = self::optional_string($sessionId, 'session id');
        $this->connection = self::optional_string($connection, 'connection');
        $this->queue = self::optional_string($queue, 'queue');
        $this->requirements = self::requirements($requirements);
        $this->leaseSeconds = self::optional_positive($leaseSeconds, 'leaseSeconds');
        $this->ttlSeconds = self::optional_positive($ttlSeconds, 'ttlSeconds');
        $this->maxConcurrentActivities = self::optional_positive($maxConcurrentActivities, 'maxConcurrentActivities');
    }

    /**
     * @throws InvalidArgumentException For a blank session id.
     */
    public function withSessionId(string $sessionId): self
    {
        return new self(
            queue: $this->queue,
            requirements: $this->requirements,
            leaseSeconds: $this->leaseSeconds,
            ttlSeconds: $this->ttlSeconds,
            maxConcurrentActivities: $this->maxConcurrentActivities,
            connection: $this->connection,
            createIfMissing: $this->createIfMissing,
            allowReacquireAfterFailure: $this->allowReacquireAfterFailure,
            sessionId: $sessionId,
        );
    }

    /**
     * The library's snapshot: what a bound step stores under
     * `worker_session` (nine keys, null for what was not set).
     *
     * @return array{session_id: string, connection: ?string, queue: ?string, requirements: list<string>, lease_seconds: ?int, ttl_seconds: ?int, max_concurrent_activities: ?int, create_if_missing: bool, allow_reacquire_after_failure: bool}
     * @throws InvalidArgumentException Without a session id.
     */
    public function toSnapshot(): array
    {
        if ($this->sessionId === null) {
            throw new InvalidArgumentException('Worker session id must be set before snapshotting activity options.');
        }
        return [
            'session_id' => $this->sessionId,
            'connection' => $this->connection,
            'queue' => $this->queue,
            'requirements' => $this->requirements,
            'lease_seconds' => $this->leaseSeconds,
            'ttl_seconds' => $this->ttlSeconds,
            'max_concurrent_activities' => $this->maxConcurrentActivities,
            'create_if_missing' => $this->createIfMissing,
            'allow_reacquire_after_failure' => $this->allowReacquireAfterFailure,
        ];
    }

    /**
     * The snapshot with every default applied, as jobs.worker_session
     * stores it; without a session queue, the job's own queue is recorded
     * (the server defaults a session's queue to its activity's).
     *
     * @return array<string, mixed>
     */
    public function toNormalizedSnapshot(string $job_queue): array
    {
        $snapshot = $this->toSnapshot();
        $snapshot['queue'] ??= $job_queue;
        $snapshot['lease_seconds'] ??= self::DEFAULT_LEASE_SECONDS;
        $snapshot['ttl_seconds'] ??= self::DEFAULT_TTL_SECONDS;
        $snapshot['max_concurrent_activities'] ??= self::DEFAULT_MAX_CONCURRENT_ACTIVITIES;
        return $snapshot;
    }

    /**
     * Reads a worker_session object (a step definition's, a branch's) with
     * the rules of the library's WorkflowCommandNormalizer: strict types,
     * explicit null = not provided, every bad field reported. The message
     * lists them as the Go daemon does ("worker_session.<field>: <message>").
     *
     * @throws InvalidArgumentException
     */
    public static function fromSnapshot(mixed $raw): self
    {
        if (!is_array($raw)) {
            throw new InvalidArgumentException('Workflow task command field [worker_session] must be an object when provided.');
        }
        $id = $raw['session_id'] ?? null;
        if (!is_string($id) || self::trim($id) === '') {
            throw new InvalidArgumentException('worker_session.session_id: Worker session commands require a non-empty session_id.');
        }
        $errors = [];
        $strings = [];
        foreach (['connection', 'queue'] as $field) {
            $v = $raw[$field] ?? null;
            if ($v === null) {
                continue;
            }
            if (!is_string($v) || self::trim($v) === '') {
                $errors[$field] = sprintf('Worker session field [%s] must be a non-empty string when provided.', $field);
                continue;
            }
            $strings[$field] = $v;
        }
        $ints = [];
        foreach (['lease_seconds', 'ttl_seconds', 'max_concurrent_activities'] as $field) {
            $v = $raw[$field] ?? null;
            if ($v === null) {
                continue;
            }
            if (!is_int($v) || $v < 1) {
                $errors[$field] = sprintf('Worker session field [%s] must be a positive integer when provided.', $field);
                continue;
            }
            $ints[$field] = $v;
        }
        $bools = [];
        foreach (['create_if_missing', 'allow_reacquire_after_failure'] as $field) {
            $v = $raw[$field] ?? null;
            if ($v === null) {
                continue;
            }
            if (!is_bool($v)) {
                $errors[$field] = sprintf('Worker session field [%s] must be boolean when provided.', $field);
                continue;
            }
            $bools[$field] = $v;
        }
        $requirements = [];
        if (($raw['requirements'] ?? null) !== null) {
            if (!is_array($raw['requirements'])) {
                $errors['requirements'] = 'Worker session requirements must be a list of non-empty strings.';
            } else {
                foreach (array_values($raw['requirements']) as $position => $requirement) {
                    if (!is_string($requirement) || self::trim($requirement) === '') {
                        $errors["requirements.{$position}"] = 'Worker session requirements must be non-empty strings.';
                        continue;
                    }
                    $requirements[] = $requirement;
                }
            }
        }
        if ($errors !== []) {
            $parts = [];
            foreach ($errors as $field => $message) {
                $parts[] = "worker_session.{$field}: {$message}";
            }
            throw new InvalidArgumentException(implode(' ', $parts));
        }
        return new self(
            queue: $strings['queue'] ?? null,
            requirements: $requirements,
            leaseSeconds: $ints['lease_seconds'] ?? null,
            ttlSeconds: $ints['ttl_seconds'] ?? null,
            maxConcurrentActivities: $ints['max_concurrent_activities'] ?? null,
            connection: $strings['connection'] ?? null,
            createIfMissing: $bools['create_if_missing'] ?? true,
            allowReacquireAfterFailure: $bools['allow_reacquire_after_failure'] ?? true,
            sessionId: $id,
        );
    }

    private static function optional_string(?string $value, string $field): ?string
    {
        if ($value === null) {
            return null;
        }
        $value = self::trim($value);
        if ($value === '') {
            throw new InvalidArgumentException(sprintf('Worker session %s must be a non-empty string.', $field));
        }
        return $value;
    }

    private static function optional_positive(?int $value, string $field): ?int
    {
        if ($value !== null && $value < 1) {
            throw new InvalidArgumentException(sprintf('Worker session %s must be a positive integer.', $field));
        }
        return $value;
    }

    /**
     * Trimmed and de-duplicated in first-seen order.
     *
     * @param array<mixed> $requirements
     * @return list<string>
     */
    private static function requirements(array $requirements): array
    {
        $out = [];
        foreach (array_values($requirements) as $index => $requirement) {
            if (!is_string($requirement) || self::trim($requirement) === '') {
                throw new InvalidArgumentException(sprintf('Worker session requirement at index %d must be a non-empty string.', $index));
            }
            $out[] = self::trim($requirement);
        }
        return array_values(array_unique($out));
    }

    /**
     * PHP's default trim set; the Go side trims exactly these characters.
     */
    private static function trim(string $value): string
    {
        return trim($value, " \t\n\r\0\x0B");
    }
}
