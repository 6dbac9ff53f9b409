<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\JobContext;
use Queuety\Bridge\Trace;

/**
 * Workflow artifacts in the `artifacts` table, as the plugin stores them:
 * one row per (workflow, key), an upsert keeping id and created_at; kind
 * json content is json_encode(…, JSON_UNESCAPED_SLASHES), other kinds
 * raw strings; metadata JSON (`[]` when empty). A put during one of the
 * workflow's steps is also listed on that step's event.
 */
class ArtifactStore
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * @param array<mixed> $metadata
     */
    public function put(int $workflow_id, string $artifact_key, mixed $content, string $kind = 'json', ?int $step_index = null, array $metadata = []): void
    {
        if ($workflow_id < 1) {
            throw new \InvalidArgumentException('Artifacts require a valid workflow ID.');
        }
        $artifact_key = trim($artifact_key);
        $kind = trim($kind);
        if ($artifact_key === '') {
            throw new \InvalidArgumentException('Artifacts require a non-empty key.');
        }
        if ($kind === '') {
            throw new \InvalidArgumentException('Artifacts require a non-empty kind.');
        }
        $table = $this->conn->table(Config::table_artifacts());
        $this->conn->pdo()->prepare("INSERT INTO {$table} (workflow_id, artifact_key, kind, content, metadata, step_index)
            VALUES (:workflow_id, :artifact_key, :kind, :content, :metadata, :step_index)
            ON DUPLICATE KEY UPDATE kind = VALUES(kind), content = VALUES(content), metadata = VALUES(metadata),
                step_index = VALUES(step_index), updated_at = CURRENT_TIMESTAMP")
            ->execute([
                'workflow_id' => $workflow_id, 'artifact_key' => $artifact_key, 'kind' => $kind,
                'content' => self::encode($content, $kind), 'metadata' => json_encode($metadata, JSON_THROW_ON_ERROR),
                'step_index' => $step_index,
            ]);
        if (JobContext::current()?->workflow_id === $workflow_id) {
            Trace::add_artifact(['key' => $artifact_key, 'kind' => $kind, 'step_index' => $step_index, 'metadata' => $metadata]);
        }
    }

    /**
     * @return array<string, mixed>|null
     */
    public function get(int $workflow_id, string $artifact_key): ?array
    {
        $stmt = $this->conn->pdo()->prepare('SELECT * FROM ' . $this->conn->table(Config::table_artifacts()) . ' WHERE workflow_id = :workflow_id AND artifact_key = :artifact_key LIMIT 1');
        $stmt->execute(['workflow_id' => $workflow_id, 'artifact_key' => trim($artifact_key)]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? self::map($row, true) : null;
    }

    /**
     * @return list<array<string, mixed>> By key.
     */
    public function list(int $workflow_id, bool $include_content = false): array
    {
        $stmt = $this->conn->pdo()->prepare('SELECT * FROM ' . $this->conn->table(Config::table_artifacts()) . ' WHERE workflow_id = :workflow_id ORDER BY artifact_key ASC');
        $stmt->execute(['workflow_id' => $workflow_id]);
        return array_map(static fn (array $row): array => self::map($row, $include_content), $stmt->fetchAll(\PDO::FETCH_ASSOC));
    }

    public function delete(int $workflow_id, string $artifact_key): void
    {
        $this->conn->pdo()->prepare('DELETE FROM ' . $this->conn->table(Config::table_artifacts()) . ' WHERE workflow_id = :workflow_id AND artifact_key = :artifact_key')
            ->execute(['workflow_id' => $workflow_id, 'artifact_key' => trim($artifact_key)]);
    }

    private static function encode(mixed $content, string $kind): string
    {
        if (strtolower($kind) !== 'json' && is_string($content)) {
            return $content;
        }
        return json_encode($content, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
    }

    /**
     * @param array<string, mixed> $row
     * @return array<string, mixed>
     */
    private static function map(array $row, bool $include_content): array
    {
        $kind = is_string($row['kind'] ?? null) ? $row['kind'] : 'json';
        $result = [
            'id' => (int) ($row['id'] ?? 0),
            'workflow_id' => (int) ($row['workflow_id'] ?? 0),
            'key' => $row['artifact_key'] ?? null,
            'kind' => $kind,
            'step_index' => is_numeric($row['step_index'] ?? null) ? (int) $row['step_index'] : null,
            'metadata' => is_string($row['metadata'] ?? null) ? json_decode($row['metadata'], true) : [],
            'created_at' => $row['created_at'] ?? null,
            'updated_at' => $row['updated_at'] ?? null,
        ];
        if ($include_content) {
            $content = $row['content'] ?? null;
            $result['content'] = strtolower($kind) === 'json' ? (is_string($content) ? json_decode($content, true) : null) : $content;
        }
        return $result;
    }
}
