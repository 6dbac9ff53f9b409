<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * The database the Queuety tables live in, with the plugin's constructor.
 * The bridge speaks PDO (pdo_mysql) only; the plugin's mysqli transport is
 * for WordPress hosts without pdo_mysql.
 */
class Connection
{
    private ?PDO $pdo = null;

    /**
     * @param string      $host         DB_HOST forms: host, host:port, /socket, host:/socket, [ipv6]:port.
     * @param string      $prefix       The WordPress table prefix ($table_prefix).
     * @param string|null $table_prefix Overrides QUEUETY_TABLE_PREFIX for this connection.
     * @param string|null $driver       auto or pdo (QUEUETY_DB_DRIVER when null); mysqli is refused.
     */
    public function __construct(
        private readonly string $host,
        private readonly string $dbname,
        private readonly string $user,
        private readonly string $password,
        private readonly string $prefix = 'wp_',
        private readonly ?string $table_prefix = null,
        private readonly ?string $driver = null,
    ) {
    }

    /**
     * A connection from a wp-config.php, read without running it: DB_HOST,
     * DB_NAME, DB_USER, DB_PASSWORD and $table_prefix. Queuety's own
     * QUEUETY_TABLE_PREFIX and QUEUETY_TABLE_* defines in the file become
     * constants (unless already defined), as loading wp-config.php would
     * make them; the queuety daemon reads the same file the same way, so
     * both name the tables alike.
     */
    public static function from_wp_config(string $path, ?string $driver = null): self
    {
        $config = ConfigParser::from_wp_config($path);
        foreach ($config['defines'] as $name => $value) {
            if (($name === 'QUEUETY_TABLE_PREFIX' || isset(Config::TABLES[$name])) && !defined($name)) {
                define($name, $value);
            }
        }
        return new self($config['host'], $config['name'], $config['user'], $config['password'], $config['prefix'], null, $driver);
    }

    public function pdo(): PDO
    {
        return $this->pdo ??= $this->create_pdo();
    }

    public function driver(): string
    {
        return $this->resolve_driver();
    }

    public static function has_available_driver(): bool
    {
        return extension_loaded('pdo_mysql');
    }

    public function prefix(): string
    {
        return $this->prefix;
    }

    /**
     * The Queuety prefix used after the WordPress prefix.
     */
    public function table_prefix(): string
    {
        if ($this->table_prefix === null) {
            return Config::table_prefix();
        }
        return self::normalize_table_prefix($this->table_prefix);
    }

    /**
     * A full table name: table(Config::table_jobs()) is "wp_queuety_jobs".
     */
    public function table(string $name): string
    {
        return $this->prefix . $this->resolve_table_name($name);
    }

    /**
     * The PDO DSN for DB_HOST, as the plugin builds it.
     */
    public function dsn(): string
    {
        $options = ['dbname' => $this->dbname, 'charset' => 'utf8mb4'] + self::host_options($this->host);
        $parts = [];
        foreach ($options as $key => $value) {
            $parts[] = "{$key}={$value}";
        }
        return 'mysql:' . implode(';', $parts);
    }

    /**
     * The same database as a DSN for the queuety daemon (go-sql-driver's
     * form: user:password@tcp(host:port)/dbname or unix(/socket)).
     */
    public function go_dsn(): string
    {
        $o = self::host_options($this->host);
        $net = isset($o['unix_socket']) ? "unix({$o['unix_socket']})"
            : sprintf('tcp(%s:%s)', str_contains($o['host'], ':') ? "[{$o['host']}]" : $o['host'], $o['port'] ?? '3306');
        return sprintf('%s:%s@%s/%s', $this->user, $this->password, $net, $this->dbname);
    }

    /**
     * WordPress's DB_HOST forms: host, host:port, /socket, host:/socket,
     * [ipv6] and [ipv6]:port.
     *
     * @return array<string, string>
     */
    private static function host_options(string $host): array
    {
        if (str_starts_with($host, '/')) {
            return ['unix_socket' => $host];
        }
        if (preg_match('/^\[(.+)\](?::(\d+))?$/', $host, $m)) {
            return empty($m[2]) ? ['host' => $m[1]] : ['host' => $m[1], 'port' => $m[2]];
        }
        if (substr_count($host, ':') === 1) {
            [$base, $suffix] = explode(':', $host, 2);
            if ($suffix !== '' && ctype_digit($suffix)) {
                return ['host' => $base, 'port' => $suffix];
            }
            if (str_starts_with($suffix, '/')) {
                return ['unix_socket' => $suffix];
            }
        }
        return ['host' => $host];
    }

    private function create_pdo(): PDO
    {
        $this->resolve_driver();
        return new PDO($this->dsn(), $this->user, $this->password, [
            PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
            PDO::ATTR_DEFAULT_FETCH_MODE => PDO::FETCH_ASSOC,
            PDO::ATTR_EMULATE_PREPARES => false,
        ]);
    }

    private function resolve_driver(): string
    {
        $source = $this->driver ?? (defined('QUEUETY_DB_DRIVER') ? constant('QUEUETY_DB_DRIVER') : 'auto');
        $driver = is_scalar($source) ? strtolower(trim((string) $source)) : 'auto';
        if ($driver === '' || $driver === 'auto' || $driver === 'pdo') {
            if (!extension_loaded('pdo_mysql')) {
                throw new \RuntimeException('The Queuety PHP bridge needs the pdo_mysql PHP extension (Debian: apt-get install php-mysql).');
            }
            return 'pdo';
        }
        if ($driver === 'mysqli') {
            throw new \RuntimeException('The Queuety PHP bridge speaks PDO only: use driver "pdo" (or "auto") and install pdo_mysql.');
        }
        throw new \InvalidArgumentException(sprintf('Unsupported Queuety DB driver "%s".', $driver));
    }

    /**
     * With a connection table_prefix, Queuety's shared prefix is swapped
     * for it: ('wp_', 'onumia_queuety') names "wp_onumia_queuety_jobs".
     */
    private function resolve_table_name(string $name): string
    {
        if ($this->table_prefix === null) {
            return $name;
        }
        $default = Config::table_prefix();
        if ($default !== '' && str_starts_with($name, $default)) {
            $name = substr($name, strlen($default));
        }
        return $this->table_prefix() . $name;
    }

    private static function normalize_table_prefix(string $prefix): string
    {
        $prefix = trim($prefix);
        return $prefix === '' ? '' : rtrim($prefix, '_') . '_';
    }
}
