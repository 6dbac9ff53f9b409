<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

use PDO;
use PHPUnit\Framework\TestCase;
use Queuety\Bridge\Handlers;
use Queuety\Connection;
use Queuety\Queuety;

/**
 * A test with its own database (qtphp_<random>), migrated by the queuety
 * binary with the daemon's real schema, and dropped afterwards. The
 * facade is initialised on it.
 */
abstract class DatabaseTestCase extends TestCase
{
    /**
     * A class whose tests only add rows they find again by id can share
     * one database across its tests: migrating is what makes a database
     * test slow.
     */
    protected const SHARE_DATABASE = false;

    protected string $database;
    protected Connection $conn;
    private PDO $admin;
    /** @var array<class-string, string> the shared database per class */
    private static array $shared = [];

    protected function setUp(): void
    {
        parent::setUp();
        $this->admin = self::admin();
        if (static::SHARE_DATABASE && isset(self::$shared[static::class])) {
            $this->database = self::$shared[static::class];
        } else {
            $this->database = 'qtphp_' . bin2hex(random_bytes(4));
            $this->admin->exec("CREATE DATABASE `{$this->database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
            $this->migrate();
            if (static::SHARE_DATABASE) {
                self::$shared[static::class] = $this->database;
            }
        }
        $this->conn = $this->connection();
        Queuety::init($this->conn);
    }

    protected function tearDown(): void
    {
        Queuety::reset();
        Handlers::reset();
        if (!static::SHARE_DATABASE && isset($this->admin, $this->database)) {
            $this->admin->exec("DROP DATABASE IF EXISTS `{$this->database}`");
        }
        // PHPUnit keeps every test case object until the run ends: drop the
        // connections now, or a full run holds one per test and exhausts
        // the server's max_connections.
        unset($this->conn, $this->admin);
        parent::tearDown();
    }

    public static function tearDownAfterClass(): void
    {
        if (isset(self::$shared[static::class])) {
            self::admin()->exec('DROP DATABASE IF EXISTS `' . self::$shared[static::class] . '`');
            unset(self::$shared[static::class]);
        }
        parent::tearDownAfterClass();
    }

    private static function admin(): PDO
    {
        return new PDO(sprintf('mysql:host=%s;port=%s;charset=utf8mb4', self::env('HOST', '127.0.0.1'), self::env('PORT', '3306')),
            self::env('USER', 'root'), self::env('PASSWORD', ''), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    }

    /**
     * Create the tables with `queuety migrate` (extra flags: --prefix,
     * --table-prefix).
     *
     * @param list<string> $flags
     */
    protected function migrate(array $flags = []): void
    {
        QueuetyBinary::exec(array_merge(['migrate', '--dsn', $this->go_dsn()], $flags));
    }

    /** The test database as a go-sql-driver DSN, for the queuety binary. */
    protected function go_dsn(): string
    {
        return sprintf('%s:%s@tcp(%s:%s)/%s', self::env('USER', 'root'), self::env('PASSWORD', ''),
            self::env('HOST', '127.0.0.1'), self::env('PORT', '3306'), $this->database);
    }

    /** Poll $condition every 100 ms for up to $seconds; its last answer. */
    protected function wait_until(float $seconds, callable $condition): bool
    {
        $deadline = microtime(true) + $seconds;
        do {
            if ($condition()) {
                return true;
            }
            usleep(100_000);
        } while (microtime(true) < $deadline);
        return (bool) $condition();
    }

    protected function connection(string $prefix = 'wp_', ?string $table_prefix = null): Connection
    {
        return new Connection(self::env('HOST', '127.0.0.1') . ':' . self::env('PORT', '3306'), $this->database,
            self::env('USER', 'root'), self::env('PASSWORD', ''), $prefix, $table_prefix);
    }

    /**
     * A job row as PDO returns it (every column a string or null, as the
     * plugin fixtures were recorded).
     *
     * @return array<string, string|null>
     */
    protected function job(int $id, string $table = 'wp_queuety_jobs'): array
    {
        $pdo = new PDO($this->conn->dsn(), self::env('USER', 'root'), self::env('PASSWORD', ''), [
            PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_STRINGIFY_FETCHES => true,
        ]);
        $stmt = $pdo->prepare("SELECT * FROM `{$table}` WHERE id = ?");
        $stmt->execute([$id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        self::assertIsArray($row, "job {$id} in {$table}");
        return $row;
    }

    private static function env(string $name, string $default): string
    {
        $v = getenv('QUEUETY_TEST_DB_' . $name);
        return is_string($v) && $v !== '' ? $v : $default;
    }
}
