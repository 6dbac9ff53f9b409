<?php

declare(strict_types=1);

namespace Queuety;

/**
 * The webhooks table, with the plugin's WebhookNotifier methods for
 * registering, listing and removing hooks. Sending is the worker's part:
 * `queuety work` posts each event to the URLs registered for it, with the
 * plugin's request and body, and reads this table again every few seconds,
 * so a hook registered here is picked up without a restart. The bridge
 * runs no worker, so it has no notify().
 */
class WebhookNotifier
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Register a URL for an event (job.completed, job.failed, job.buried,
     * workflow.failed); returns the new id. Like the plugin, anything is
     * stored; `queuety webhook add` checks the event and URL first.
     */
    public function register(string $event, string $url): int
    {
        $stmt = $this->conn->pdo()->prepare('INSERT INTO ' . $this->table() . ' (event, url) VALUES (:event, :url)');
        $stmt->execute(['event' => $event, 'url' => $url]);
        return (int) $this->conn->pdo()->lastInsertId();
    }

    /** Remove a webhook by id (nothing happens when there is none). */
    public function remove(int $id): void
    {
        $stmt = $this->conn->pdo()->prepare('DELETE FROM ' . $this->table() . ' WHERE id = :id');
        $stmt->execute(['id' => $id]);
    }

    /**
     * Every webhook, oldest first, as rows keyed by column name.
     *
     * @return list<array<string, mixed>>
     */
    public function list(): array
    {
        $stmt = $this->conn->pdo()->query('SELECT * FROM ' . $this->table() . ' ORDER BY id ASC');
        if ($stmt === false) {
            return [];
        }
        /** @var list<array<string, mixed>> $rows */
        $rows = $stmt->fetchAll(\PDO::FETCH_ASSOC);
        return $rows;
    }

    private function table(): string
    {
        return $this->conn->table(Config::table_webhooks());
    }
}
