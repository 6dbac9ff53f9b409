<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * bin/queuety-php-worker's command line.
 */
final class WorkerOptions
{
    public const USAGE = <<<'TXT'
        usage: queuety-php-worker --bootstrap app.php [--wp-load /path/to/wp-load.php [--url URL]]
               queuety-php-worker --wp-load /path/to/wp-load.php [--url URL]

        The PHP side of the queuety daemon's handler pool; the daemon starts it:
            queuety work --php "php php-bridge/bin/queuety-php-worker --bootstrap app.php"

          --bootstrap FILE  the application file that registers handlers
                            (Queuety\Bridge\Handlers::register) and loads
                            Composer's vendor/autoload.php or anything else
          --wp-load FILE    load WordPress first (wp-load.php), for handlers
                            that use WordPress functions; alone, the site's
                            plugins register the handlers (Queuety::register)
          --url URL         with --wp-load, load WordPress for this site of a
                            multisite network (example.com/blog/), as
                            WP-CLI's --url: the request WordPress sees names it

        TXT;

    public function __construct(
        /** Null with --wp-load alone: WordPress's plugins register the handlers. */
        public readonly ?string $bootstrap,
        public readonly ?string $wp_load = null,
        public readonly bool $help = false,
        /** --url: the multisite subsite WordPress is loaded for. */
        public readonly ?string $url = null,
    ) {
    }

    /**
     * The $_SERVER entries of a CLI request for $url, as WP-CLI's --url
     * sets them: multisite's ms-settings.php finds the subsite from
     * HTTP_HOST and REQUEST_URI.
     *
     * @return array<string, string>
     * @throws \InvalidArgumentException For a URL without a host.
     */
    public static function serverFor(string $url): array
    {
        if (!preg_match('~^[a-z][a-z0-9+.-]*://~i', $url)) {
            $url = 'http://' . $url;
        }
        $parts = parse_url($url);
        if ($parts === false || !isset($parts['host']) || $parts['host'] === '') {
            throw new \InvalidArgumentException("--url {$url}: no host");
        }
        $host = $parts['host'] . (isset($parts['port']) ? ':' . $parts['port'] : '');
        $server = [
            'HTTP_HOST' => $host,
            'SERVER_NAME' => $parts['host'],
            'REQUEST_URI' => ($parts['path'] ?? '/') . (isset($parts['query']) ? '?' . $parts['query'] : ''),
            'REQUEST_METHOD' => 'GET',
        ];
        if (strtolower($parts['scheme'] ?? '') === 'https') {
            $server['HTTPS'] = 'on';
        }
        return $server;
    }

    /**
     * @param list<string> $argv
     * @throws \InvalidArgumentException With what is wrong.
     */
    public static function parse(array $argv): self
    {
        $values = ['bootstrap' => null, 'wp-load' => null, 'url' => null];
        $args = array_slice($argv, 1);
        for ($i = 0; $i < count($args); $i++) {
            $arg = $args[$i];
            if ($arg === '--help' || $arg === '-h') {
                return new self(null, null, true);
            }
            [$name, $value] = str_contains($arg, '=') ? explode('=', $arg, 2) : [$arg, null];
            $key = substr($name, 2);
            if (!str_starts_with($name, '--') || !array_key_exists($key, $values)) {
                throw new \InvalidArgumentException("unknown argument {$arg}");
            }
            if ($value === null) {
                if (!isset($args[$i + 1])) {
                    throw new \InvalidArgumentException($key === 'url' ? "{$name} needs a URL" : "{$name} needs a file");
                }
                $value = $args[++$i];
            }
            $values[$key] = $value;
        }
        if ($values['bootstrap'] === null && $values['wp-load'] === null) {
            throw new \InvalidArgumentException('--bootstrap is required (or --wp-load, whose plugins register the handlers)');
        }
        $url = $values['url'];
        unset($values['url']);
        if ($url !== null) {
            if ($values['wp-load'] === null) {
                throw new \InvalidArgumentException('--url needs --wp-load: it names the site WordPress is loaded for');
            }
            self::serverFor($url);
        }
        foreach ($values as $key => $file) {
            if ($file !== null && !is_readable($file)) {
                throw new \InvalidArgumentException("--{$key} {$file}: no such readable file");
            }
        }
        return new self($values['bootstrap'], $values['wp-load'], false, $url);
    }
}
