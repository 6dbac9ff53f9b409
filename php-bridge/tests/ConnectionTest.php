<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Config;
use Queuety\ConfigParser;
use Queuety\Connection;

/**
 * DB_HOST forms, table naming (spec §1.1) and wp-config.php reading.
 */
final class ConnectionTest extends TestCase
{
    /**
     * @dataProvider hosts
     */
    public function test_dsn_understands_wordpress_db_host_forms(string $host, string $dsn): void
    {
        $this->assertSame($dsn, (new Connection($host, 'wp', 'u', 'p'))->dsn());
    }

    /**
     * @return array<string, array{string, string}>
     */
    public static function hosts(): array
    {
        return [
            'host' => ['db.local', 'mysql:dbname=wp;charset=utf8mb4;host=db.local'],
            'host:port' => ['127.0.0.1:3307', 'mysql:dbname=wp;charset=utf8mb4;host=127.0.0.1;port=3307'],
            'socket' => ['/run/mysqld/mysqld.sock', 'mysql:dbname=wp;charset=utf8mb4;unix_socket=/run/mysqld/mysqld.sock'],
            'host:socket' => ['localhost:/tmp/my.sock', 'mysql:dbname=wp;charset=utf8mb4;unix_socket=/tmp/my.sock'],
            '[ipv6]:port' => ['[::1]:3306', 'mysql:dbname=wp;charset=utf8mb4;host=::1;port=3306'],
            '[ipv6]' => ['[::1]', 'mysql:dbname=wp;charset=utf8mb4;host=::1'],
            'bare ipv6' => ['::1', 'mysql:dbname=wp;charset=utf8mb4;host=::1'],
        ];
    }

    public function test_table_names_without_constants(): void
    {
        $this->assertSame('wp_queuety_jobs', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_jobs()));
        $this->assertSame('wp_2_queuety_logs', (new Connection('h', 'd', 'u', 'p', 'wp_2_'))->table(Config::table_logs()));
        $this->assertSame('queuety_', (new Connection('h', 'd', 'u', 'p'))->table_prefix());
        // A connection table_prefix replaces Queuety's, normalised.
        $this->assertSame('wp_onumia_queuety_jobs', (new Connection('h', 'd', 'u', 'p', 'wp_', 'onumia_queuety'))->table(Config::table_jobs()));
        $this->assertSame('wp_themequeue_state_machine_events', (new Connection('h', 'd', 'u', 'p', 'wp_', ' themequeue__ '))->table(Config::table_state_machine_events()));
        $this->assertSame('wp_jobs', (new Connection('h', 'd', 'u', 'p', 'wp_', ''))->table(Config::table_jobs()));
        $this->assertSame('wp_queuety_workflow_dispatch_keys', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_workflow_dispatch_keys()));
    }

    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_table_names_follow_queuety_table_prefix(): void
    {
        define('QUEUETY_TABLE_PREFIX', 'themequeue');
        $this->assertSame('themequeue_', Config::table_prefix());
        $this->assertSame('wp_themequeue_jobs', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_jobs()));
        $this->assertSame('wp_other_jobs', (new Connection('h', 'd', 'u', 'p', 'wp_', 'other'))->table(Config::table_jobs()), 'the connection prefix replaces it');
    }

    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_an_empty_queuety_table_prefix_means_none(): void
    {
        define('QUEUETY_TABLE_PREFIX', '  ');
        $this->assertSame('wp_jobs', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_jobs()));
    }

    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_a_table_override_is_used_as_is(): void
    {
        define('QUEUETY_TABLE_PREFIX', 'themequeue_');
        define('QUEUETY_TABLE_JOBS', ' My_Jobs');
        $this->assertSame('wp_ My_Jobs', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_jobs()), 'not trimmed, no shared prefix');
        $this->assertSame('wp_themequeue_logs', (new Connection('h', 'd', 'u', 'p'))->table(Config::table_logs()));
    }

    public function test_mysqli_is_refused_clearly(): void
    {
        $this->expectExceptionMessage('speaks PDO only');
        (new Connection('h', 'd', 'u', 'p', 'wp_', null, 'mysqli'))->driver();
    }

    public function test_wp_config_is_read_without_running_it(): void
    {
        $file = self::wp_config(<<<'PHP'
            <?php
            // define('DB_HOST', 'commented-out.example');
            /* define( 'DB_NAME', 'old' ); */
            define( 'DB_NAME', 'site' );
            define( "DB_USER", "wp\"user" );
            define( 'DB_PASSWORD', 'it\'s $ecret' );
            define( 'DB_HOST', 'db.example:3307' );
            define( 'DB_HOST', 'ignored: the first define wins' );
            define( 'QUEUETY_TABLE_PREFIX', 'themequeue' );
            define( 'WP_DEBUG', false );
            $table_prefix = 'wp_';
            $table_prefix = 'site_';
            if ( ! defined( 'ABSPATH' ) ) { define( 'ABSPATH', __DIR__ . '/' ); }
            require_once ABSPATH . 'wp-settings.php';
            PHP);
        $config = ConfigParser::from_wp_config($file);
        $this->assertSame(['db.example:3307', 'site', 'wp"user', "it's \$ecret", 'site_'],
            [$config['host'], $config['name'], $config['user'], $config['password'], $config['prefix']]);
        $this->assertSame('themequeue', $config['defines']['QUEUETY_TABLE_PREFIX']);
        $this->assertArrayNotHasKey('WP_DEBUG', $config['defines'], 'only string literals');
    }

    /**
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function test_from_wp_config_builds_the_connection_and_defines_queuety_constants(): void
    {
        $conn = Connection::from_wp_config(self::wp_config(<<<'PHP'
            <?php
            define('DB_NAME', 'site'); define('DB_USER', 'u'); define('DB_PASSWORD', ''); define('DB_HOST', 'localhost:/tmp/s.sock');
            define('QUEUETY_TABLE_PREFIX', 'themequeue');
            define('QUEUETY_TABLE_LOGS', 'custom_logs');
            $table_prefix = 'blog_';
            PHP));
        $this->assertSame('mysql:dbname=site;charset=utf8mb4;unix_socket=/tmp/s.sock', $conn->dsn());
        $this->assertSame('blog_', $conn->prefix());
        $this->assertSame('blog_themequeue_jobs', $conn->table(Config::table_jobs()), 'as if wp-config.php had been loaded');
        $this->assertSame('blog_custom_logs', $conn->table(Config::table_logs()));
    }

    public function test_wp_config_errors_are_the_plugins(): void
    {
        try {
            ConfigParser::from_wp_config('/nonexistent/wp-config.php');
            $this->fail('no exception');
        } catch (\RuntimeException $e) {
            $this->assertSame('Cannot read wp-config.php at: /nonexistent/wp-config.php', $e->getMessage());
        }
        $this->expectExceptionMessage('Could not find DB_PASSWORD in wp-config.php');
        ConfigParser::from_wp_config(self::wp_config("<?php define('DB_NAME','a'); define('DB_USER','b'); define('DB_HOST','c');"));
    }

    public function test_prefix_defaults_to_wp(): void
    {
        $config = ConfigParser::from_wp_config(self::wp_config("<?php define('DB_NAME','a'); define('DB_USER','b'); define('DB_PASSWORD','x'); define('DB_HOST','c');"));
        $this->assertSame('wp_', $config['prefix']);
    }

    private static function wp_config(string $source): string
    {
        $file = tempnam(sys_get_temp_dir(), 'wpconfig');
        file_put_contents($file, $source);
        register_shutdown_function(static fn () => @unlink($file));
        return $file;
    }
}
