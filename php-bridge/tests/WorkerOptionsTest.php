<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Bridge\WorkerOptions;

/**
 * --url loads WordPress for one subsite of a network, as WP-CLI's --url.
 */
final class WorkerOptionsTest extends TestCase
{
    public function test_url_names_the_subsite_in_the_request(): void
    {
        $load = tempnam(sys_get_temp_dir(), 'wp-load');
        try {
            $o = WorkerOptions::parse(['w', '--wp-load', $load, '--url', 'example.test/blog/']);
            self::assertSame('example.test/blog/', $o->url);
            self::assertSame($load, $o->wp_load);
        } finally {
            unlink($load);
        }
        self::assertSame(
            ['HTTP_HOST' => 'example.test', 'SERVER_NAME' => 'example.test', 'REQUEST_URI' => '/blog/', 'REQUEST_METHOD' => 'GET'],
            WorkerOptions::serverFor('example.test/blog/'),
        );
        self::assertSame(
            ['HTTP_HOST' => 'a.example.test:8443', 'SERVER_NAME' => 'a.example.test', 'REQUEST_URI' => '/', 'REQUEST_METHOD' => 'GET', 'HTTPS' => 'on'],
            WorkerOptions::serverFor('https://a.example.test:8443'),
        );
    }

    public function test_url_without_wp_load_or_host_is_refused(): void
    {
        try {
            WorkerOptions::parse(['w', '--bootstrap', __FILE__, '--url', 'example.test/']);
            self::fail('--url without --wp-load');
        } catch (\InvalidArgumentException $e) {
            self::assertStringContainsString('--url needs --wp-load', $e->getMessage());
        }
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('no host');
        WorkerOptions::serverFor('http:///path');
    }
}
