<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety's Heartbeat::beat() for long handlers: it keeps the job from
 * being taken as stale and stores progress in heartbeat_data. Inside the
 * bridge's worker a beat is a frame to the daemon, which writes it (and
 * cancels the job if its row was lost); after the plugin-style init() it
 * is the plugin's UPDATE.
 */
final class Heartbeat
{
    private static ?int $current_job_id = null;
    private static ?Connection $conn = null;
    /** @var \Closure(array<mixed>): void|null */
    private static ?\Closure $sender = null;

    /**
     * The plugin's form: beats UPDATE the job row directly.
     */
    public static function init(int $job_id, Connection $conn): void
    {
        self::$current_job_id = $job_id;
        self::$conn = $conn;
        self::$sender = null;
    }

    /**
     * The bridge worker's form: beats go to $sender.
     *
     * @param \Closure(array<mixed>): void $sender
     */
    public static function bind(int $job_id, \Closure $sender): void
    {
        self::$current_job_id = $job_id;
        self::$conn = null;
        self::$sender = $sender;
    }

    /**
     * @param array<mixed> $progress Stored in heartbeat_data unless empty.
     */
    public static function beat(array $progress = []): void
    {
        if (self::$current_job_id === null) {
            return;
        }
        if (self::$sender !== null) {
            (self::$sender)($progress);
            return;
        }
        if (self::$conn === null) {
            return;
        }
        $table = self::$conn->table(Config::table_jobs());
        if ($progress === []) {
            self::$conn->pdo()->prepare("UPDATE {$table} SET reserved_at = NOW() WHERE id = :id")
                ->execute(['id' => self::$current_job_id]);
            return;
        }
        self::$conn->pdo()->prepare("UPDATE {$table} SET reserved_at = NOW(), heartbeat_data = :heartbeat_data WHERE id = :id")
            ->execute(['heartbeat_data' => json_encode($progress, JSON_THROW_ON_ERROR), 'id' => self::$current_job_id]);
    }

    public static function clear(): void
    {
        self::$current_job_id = null;
        self::$conn = null;
        self::$sender = null;
    }

    public static function current_job_id(): ?int
    {
        return self::$current_job_id;
    }
}
