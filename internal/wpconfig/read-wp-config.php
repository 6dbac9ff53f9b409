<?php
// Reads the constants a wp-config.php defines, for queuety-go, without
// loading WordPress. Run as
//
//   php read-wp-config.php /path/to/wp-config.php /path/to/result.json
//
// from a scratch directory that holds this script and an empty
// wp-settings.php: ABSPATH points there, so the `require_once ABSPATH .
// 'wp-settings.php'` that ends every wp-config.php loads nothing, and the
// file's own `if ( ! defined( 'ABSPATH' ) )` leaves ours alone. The result
// goes to a file, not to stdout, so that anything the site's file prints
// can be told apart from it (and refused). License: GPL-2.0-or-later.

final class QueuetyWpConfigReader
{
    public static string $result = '';
    public static bool $done = false;

    // value encodes a constant for the daemon: scalars as their PHP type
    // and (string) cast, base64 so that binary passwords survive JSON;
    // arrays one level deep as ordered [key, value] pairs; anything else
    // (objects, nested arrays) is left out.
    public static function value($v, bool $nested = false): ?array
    {
        if (is_array($v)) {
            if ($nested) {
                return null;
            }
            $entries = [];
            foreach ($v as $k => $item) {
                $e = self::value($item, true);
                if ($e === null) {
                    return null;
                }
                $entries[] = [base64_encode((string) $k), $e];
            }
            return ['t' => 'array', 'a' => $entries];
        }
        if (is_scalar($v) || $v === null) {
            return ['t' => gettype($v), 's' => base64_encode((string) $v)];
        }
        return null;
    }

    // output is how much the file printed: blank space and byte-order
    // marks (a BOM before "<?php" is common, and harmless) left out.
    public static function output(): int
    {
        $out = '';
        while (ob_get_level() > 0) {
            $out .= ob_get_clean();
        }
        return strlen(trim(str_replace("\xEF\xBB\xBF", '', $out)));
    }

    public static function finish(bool $hasPrefix, $prefix): void
    {
        self::$done = true;
        $constants = [];
        foreach (get_defined_constants(true)['user'] ?? [] as $name => $v) {
            if ($name === 'ABSPATH') {
                continue; // ours
            }
            $e = self::value($v);
            if ($e !== null) {
                $constants[$name] = $e;
            }
        }
        $r = ['finished' => true, 'output' => self::output(), 'constants' => (object) $constants];
        if ($hasPrefix) {
            $r['table_prefix'] = self::value($prefix);
        }
        file_put_contents(self::$result, json_encode($r));
    }

    /** @var array{what: string, file: string, line: int}|null */
    public static ?array $failure = null;

    // caught records an uncaught exception: its class and where it was
    // thrown. Its message is kept only for PHP's "Call to undefined function
    // x()" (a disabled function says so), which names code: a site's
    // exception (phpdotenv's "unexpected whitespace at [pass word]"), a
    // ParseError ("unexpected identifier ...") or an undefined constant (a
    // password left unquoted) may quote a secret.
    public static function caught(\Throwable $e): void
    {
        $what = 'uncaught ' . get_class($e);
        if (get_class($e) === 'Error' && str_starts_with($e->getMessage(), 'Call to undefined function ')) {
            $what .= ' (' . $e->getMessage() . ')';
        }
        self::$failure = ['what' => $what, 'file' => $e->getFile(), 'line' => $e->getLine()];
    }

    // shutdown reports a file that ended PHP early: exit/die, an uncaught
    // exception or a fatal error.
    public static function shutdown(): void
    {
        if (self::$done) {
            return;
        }
        $failure = self::$failure;
        $e = error_get_last();
        if ($failure === null && $e !== null && in_array($e['type'], [E_ERROR, E_PARSE, E_CORE_ERROR, E_COMPILE_ERROR, E_USER_ERROR], true)) {
            $failure = ['what' => 'fatal error', 'file' => $e['file'], 'line' => $e['line']];
        }
        file_put_contents(self::$result, json_encode([
            'finished' => false,
            'output' => self::output(),
            'failure' => $failure,
        ]));
    }
}

QueuetyWpConfigReader::$result = $argv[2];
define('ABSPATH', __DIR__ . '/');

// The official WordPress image's wp-config-docker.php defines this itself
// behind a function_exists() check; the same lookup here covers copies of
// that file that dropped the definition.
if (!function_exists('getenv_docker')) {
    function getenv_docker($env, $default)
    {
        if ($fileEnv = getenv($env . '_FILE')) {
            return rtrim(file_get_contents($fileEnv), "\r\n");
        }
        if (($val = getenv($env)) !== false) {
            return $val;
        }
        return $default;
    }
}

register_shutdown_function([QueuetyWpConfigReader::class, 'shutdown']);
set_exception_handler([QueuetyWpConfigReader::class, 'caught']);
ob_start();
// At the top level, so $table_prefix and the file's other variables are
// globals as they are when WordPress includes it from wp-load.php.
require $argv[1];
QueuetyWpConfigReader::finish(isset($table_prefix) || array_key_exists('table_prefix', get_defined_vars()), $table_prefix ?? null);
