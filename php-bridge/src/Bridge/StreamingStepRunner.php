<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * Runs a StreamingStep as the plugin's worker does: stream($state,
 * $existing_chunks) is resumed with the chunks an earlier attempt stored;
 * each yield is stored at once as a `chunks` row (chunk_index counting on
 * from the existing ones) and beats the job (reserved_at, heartbeat_data
 * {"streaming_chunks":N}); on_complete($all_chunks, $state) gives the
 * output the engine merges, and the chunks are deleted. A failed attempt
 * keeps its chunks for the next one.
 *
 * It needs the facade's database (Queuety::init in the bootstrap, or the
 * plugin's with --wp-load): the chunks are the step's durable progress.
 */
final class StreamingStepRunner
{
    public const CONTRACT = 'Queuety\\Contracts\\StreamingStep';

    public static function is_streaming(?string $class): bool
    {
        return $class !== null && interface_exists(self::CONTRACT) && class_exists($class)
            && (new \ReflectionClass($class))->implementsInterface(self::CONTRACT);
    }

    /**
     * @param array<mixed> $state
     * @return array<mixed> on_complete()'s output.
     */
    public static function run(string $class, JobContext $job, array $state): array
    {
        $conn = Runtime::connection()
            ?? throw new \RuntimeException("Streaming step {$class} needs the database for its chunks: call Queuety::init() in the worker's bootstrap (or load WordPress with --wp-load).");
        $pdo = $conn->pdo();
        $chunks = $conn->table(self::table('table_chunks', 'queuety_chunks'));
        $jobs = $conn->table(self::table('table_jobs', 'queuety_jobs'));

        $handler = new $class();
        $existing = self::chunks($pdo, $chunks, $job->id);
        $index = count($existing);
        $insert = $pdo->prepare("INSERT INTO {$chunks} (job_id, workflow_id, step_index, chunk_index, content) VALUES (:job_id, :workflow_id, :step_index, :chunk_index, :content)");
        $beat = $pdo->prepare("UPDATE {$jobs} SET reserved_at = NOW(), heartbeat_data = :heartbeat_data WHERE id = :id");
        foreach ($handler->stream($state, $existing) as $chunk) {
            $insert->execute([
                'job_id' => $job->id, 'workflow_id' => $job->workflow_id, 'step_index' => $job->step_index,
                'chunk_index' => $index, 'content' => is_scalar($chunk) ? (string) $chunk : '',
            ]);
            ++$index;
            $beat->execute(['heartbeat_data' => json_encode(['streaming_chunks' => $index], JSON_THROW_ON_ERROR), 'id' => $job->id]);
        }
        $all = self::chunks($pdo, $chunks, $job->id);
        foreach ($all as $i => $content) {
            // The plugin's worker lists them with chunk_index and content
            // null (it reads keys off the strings get_chunks returns): same
            // entries, with their values.
            Trace::add_chunk(['job_id' => $job->id, 'workflow_id' => $job->workflow_id, 'step_index' => $job->step_index, 'chunk_index' => $i, 'content' => $content]);
        }
        $output = $handler->on_complete($all, $state);
        $pdo->prepare("DELETE FROM {$chunks} WHERE job_id = :job_id")->execute(['job_id' => $job->id]);
        return $output;
    }

    /**
     * @return list<string> The stored chunks' contents, in order.
     */
    private static function chunks(\PDO $pdo, string $table, int $job_id): array
    {
        $stmt = $pdo->prepare("SELECT content FROM {$table} WHERE job_id = :job_id ORDER BY chunk_index ASC");
        $stmt->execute(['job_id' => $job_id]);
        return array_map(static fn (mixed $c): string => is_scalar($c) ? (string) $c : '', $stmt->fetchAll(\PDO::FETCH_COLUMN));
    }

    /**
     * A table's configured name from whichever Config is loaded (the
     * plugin's or the bridge's, same API), else Queuety's default.
     */
    private static function table(string $method, string $default): string
    {
        return method_exists('Queuety\\Config', $method) ? (string) \Queuety\Config::$method() : $default;
    }
}
