<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Reads database settings out of a wp-config.php without running it, as
 * the plugin's ConfigParser does. With ext-tokenizer the file is read as
 * PHP: commented-out defines are skipped and string escapes understood
 * (the daemon's Go reader does the same); without it, the plugin's
 * regular expressions are used. Only plain string literals count; the
 * first define() of a name wins, the last $table_prefix assignment wins.
 */
final class ConfigParser
{
    private const REQUIRED = ['DB_HOST' => 'host', 'DB_NAME' => 'name', 'DB_USER' => 'user', 'DB_PASSWORD' => 'password'];

    /**
     * @return array{host: string, name: string, user: string, password: string, prefix: string, defines: array<string, string>}
     * @throws \RuntimeException If the file cannot be read or a DB_* constant is missing.
     */
    public static function from_wp_config(string $path): array
    {
        if (!is_readable($path)) {
            throw new \RuntimeException("Cannot read wp-config.php at: {$path}");
        }
        $contents = file_get_contents($path);
        if ($contents === false) {
            throw new \RuntimeException("Failed to read wp-config.php at: {$path}");
        }
        [$defines, $prefix] = function_exists('token_get_all')
            ? self::scan_tokens($contents)
            : self::scan_regex($contents);

        $values = [];
        foreach (self::REQUIRED as $constant => $key) {
            if (!isset($defines[$constant])) {
                throw new \RuntimeException("Could not find {$constant} in wp-config.php");
            }
            $values[$key] = $defines[$constant];
        }
        return $values + ['prefix' => $prefix ?? 'wp_', 'defines' => $defines];
    }

    /**
     * @return array{0: array<string, string>, 1: string|null}
     */
    private static function scan_tokens(string $contents): array
    {
        $tokens = array_values(array_filter(
            token_get_all($contents),
            static fn ($t): bool => !is_array($t) || !in_array($t[0], [T_WHITESPACE, T_COMMENT, T_DOC_COMMENT], true),
        ));
        $defines = [];
        $prefix = null;
        $text = static fn (int $i): ?string => isset($tokens[$i]) ? (is_array($tokens[$i]) ? $tokens[$i][1] : $tokens[$i]) : null;
        $literal = static fn (int $i): ?string => isset($tokens[$i]) && is_array($tokens[$i]) && $tokens[$i][0] === T_CONSTANT_ENCAPSED_STRING
            ? self::unquote($tokens[$i][1])
            : null;
        foreach ($tokens as $i => $token) {
            if (!is_array($token)) {
                continue;
            }
            if ($token[0] === T_STRING && strcasecmp($token[1], 'define') === 0 && $text($i + 1) === '('
                && $text($i - 1) !== '->' && $text($i - 1) !== '::' && $text($i - 1) !== 'function') {
                $name = $literal($i + 2);
                $value = $literal($i + 4);
                if ($name !== null && $text($i + 3) === ',' && $value !== null && in_array($text($i + 5), [')', ','], true)) {
                    $defines[$name] ??= $value;
                }
            } elseif ($token[0] === T_VARIABLE && $token[1] === '$table_prefix' && $text($i + 1) === '=' && $text($i + 3) === ';') {
                $prefix = $literal($i + 2) ?? $prefix;
            }
        }
        return [$defines, $prefix];
    }

    /**
     * The plugin's patterns, for PHP builds without the tokenizer.
     *
     * @return array{0: array<string, string>, 1: string|null}
     */
    private static function scan_regex(string $contents): array
    {
        $defines = [];
        preg_match_all('/define\s*\(\s*[\'"]([A-Za-z0-9_]+)[\'"]\s*,\s*[\'"]([^\'"]*)[\'"]\s*\)/', $contents, $matches, PREG_SET_ORDER);
        foreach ($matches as $m) {
            $defines[$m[1]] ??= $m[2];
        }
        $prefix = preg_match('/\$table_prefix\s*=\s*[\'"]([^\'"]*)[\'"]\s*;/', $contents, $m) ? $m[1] : null;
        return [$defines, $prefix];
    }

    /**
     * The value of a PHP string literal without interpolation.
     */
    private static function unquote(string $literal): string
    {
        $body = substr($literal, 1, -1);
        if ($literal[0] === "'") {
            return strtr($body, ['\\\\' => '\\', "\\'" => "'"]);
        }
        // "..." without variables: PHP's escapes, an unknown one kept as is.
        return preg_replace_callback(
            '/\\\\(?:([nrtvef\\\\$"])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u\{([0-9A-Fa-f]+)\})/',
            static function (array $m): string {
                if (($m[1] ?? '') !== '') {
                    return ['n' => "\n", 'r' => "\r", 't' => "\t", 'v' => "\v", 'e' => "\e", 'f' => "\f", '\\' => '\\', '$' => '$', '"' => '"'][$m[1]];
                }
                if (($m[2] ?? '') !== '') {
                    return chr(octdec($m[2]) & 0xFF);
                }
                if (($m[3] ?? '') !== '') {
                    return chr(hexdec($m[3]));
                }
                return html_entity_decode('&#' . hexdec($m[4]) . ';', ENT_QUOTES | ENT_HTML5, 'UTF-8');
            },
            $body,
        ) ?? $body;
    }
}
