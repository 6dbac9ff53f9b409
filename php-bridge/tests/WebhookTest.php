<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\QueuetyBinary;

/**
 * Webhooks registered through the facade, as the plugin's
 * register_webhook / list_webhooks / remove_webhook write them, and sent by
 * `queuety work`: the request a PHP endpoint receives is the plugin's.
 */
final class WebhookTest extends DatabaseTestCase
{
    public function test_facade_registers_lists_and_removes_webhooks(): void
    {
        $a = Queuety::register_webhook('job.completed', 'http://127.0.0.1:9/a');
        $b = Queuety::webhook_notifier()->register('job.buried', 'https://example.com/b?x=1');
        $this->assertSame($a + 1, $b);

        $rows = Queuety::list_webhooks();
        $this->assertCount(2, $rows);
        $this->assertSame(['id', 'event', 'url', 'created_at'], array_keys($rows[0]));
        $this->assertSame([(string) $a, 'job.completed', 'http://127.0.0.1:9/a'], [(string) $rows[0]['id'], $rows[0]['event'], $rows[0]['url']]);
        $this->assertMatchesRegularExpression('/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/', (string) $rows[1]['created_at']);

        Queuety::remove_webhook($a);
        Queuety::remove_webhook($a); // gone already: nothing happens, as in the plugin
        $this->assertSame(['job.buried'], array_column(Queuety::list_webhooks(), 'event'));

        // The Go CLI lists the same rows.
        $listed = json_decode(QueuetyBinary::exec(['webhook', 'list', '--json', '--dsn', $this->go_dsn()]), true);
        $this->assertSame([['id' => $b, 'event' => 'job.buried', 'url' => 'https://example.com/b?x=1', 'created_at' => $rows[1]['created_at']]], $listed);
    }

    public function test_daemon_posts_the_plugins_request_to_a_php_endpoint(): void
    {
        $server = stream_socket_server('tcp://127.0.0.1:0', $errno, $errstr);
        $this->assertNotFalse($server, $errstr);
        $port = (int) substr((string) strrchr((string) stream_socket_get_name($server, false), ':'), 1);
        Queuety::register_webhook('job.completed', "http://127.0.0.1:{$port}/hooks/done");
        Queuety::register_webhook('job.failed', "http://127.0.0.1:{$port}/hooks/failed"); // nothing fails: never sent
        $id = Queuety::dispatch('queuety.noop', ['msg' => 'héllo/✓'])->id();

        $daemon = new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--poll-interval', '20ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
        try {
            $request = $this->accept_one($server, 20.0);
            $this->assertNotNull($request, "no webhook request\ndaemon: " . $daemon->output());
        } finally {
            $daemon->stop();
        }
        [$head, $sent] = explode("\r\n\r\n", (string) $request, 2);
        $this->assertSame("POST /hooks/done HTTP/1.1\r\nHost: 127.0.0.1:{$port}\r\nConnection: close\r\n"
            . 'Content-Type: application/json' . "\r\nContent-Length: " . strlen($sent), $head, 'exactly the plugin\'s headers');
        // The body json_encode writes, timestamp and duration aside.
        $want = json_encode(['event' => 'job.completed', 'data' => ['job_id' => $id, 'handler' => 'queuety.noop', 'queue' => 'default', 'duration_ms' => 0], 'timestamp' => 'T']);
        $got = (string) preg_replace(['/"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"/', '/"duration_ms":\d+/'], ['"timestamp":"T"', '"duration_ms":0'], $sent);
        $this->assertSame($want, $got);
    }

    /**
     * Accept one connection and read one request (headers and body),
     * answering 200.
     *
     * @param resource $server
     */
    private function accept_one($server, float $seconds): ?string
    {
        $conn = @stream_socket_accept($server, $seconds);
        if ($conn === false) {
            return null;
        }
        stream_set_timeout($conn, 5);
        $raw = '';
        while (!str_contains($raw, "\r\n\r\n") && !feof($conn)) {
            $raw .= (string) fgets($conn);
        }
        preg_match('/Content-Length: (\d+)/', $raw, $m);
        $want = (int) ($m[1] ?? 0);
        $body = '';
        while (strlen($body) < $want && !feof($conn)) {
            $body .= (string) fread($conn, $want - strlen($body));
        }
        fwrite($conn, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        fclose($conn);
        return $raw . $body;
    }
}
