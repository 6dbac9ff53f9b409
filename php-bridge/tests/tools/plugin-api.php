<?php
/**
 * Writes tests/fixtures/plugin-api.json: the public methods of the
 * plugin's facade and fluent builders (name, static, parameters with
 * their resolved types and defaults, return type), read from the plugin's
 * source with PHP's tokenizer. PluginApiTest checks the bridge against it.
 *
 *     php php-bridge/tests/tools/plugin-api.php <plugin checkout or bare git dir> [commit]
 *
 * Only signatures are recorded; nothing of the plugin's code is kept.
 */

declare(strict_types=1);

const CLASSES = ['Queuety', 'WorkflowBuilder', 'PendingJob', 'ChainBuilder', 'BatchBuilder', 'PendingSchedule', 'StateMachineBuilder'];

[$_, $source, $commit] = $argv + [null, null, 'HEAD'];
if ($source === null) {
    fwrite(STDERR, "usage: plugin-api.php <plugin checkout or bare git dir> [commit]\n");
    exit(2);
}

function plugin_file(string $source, string $commit, string $path): string
{
    if (is_file("{$source}/{$path}")) {
        return (string) file_get_contents("{$source}/{$path}");
    }
    $out = shell_exec(sprintf('git --git-dir=%s show %s 2>/dev/null', escapeshellarg($source), escapeshellarg("{$commit}:{$path}")));
    if (!is_string($out) || $out === '') {
        throw new RuntimeException("{$path} not found in {$source} at {$commit}");
    }
    return $out;
}

/** @return array<string, string> alias => fully qualified name */
function uses(array $tokens): array
{
    $uses = [];
    $depth = 0;
    for ($i = 0, $n = count($tokens); $i < $n; $i++) {
        $t = $tokens[$i];
        if ($t === '{') {
            $depth++;
        } elseif ($t === '}') {
            $depth--;
        }
        if ($depth !== 0 || !is_array($t) || $t[0] !== T_USE) {
            continue;
        }
        $text = '';
        for ($i++; $tokens[$i] !== ';'; $i++) {
            $text .= is_array($tokens[$i]) ? $tokens[$i][1] : $tokens[$i];
        }
        $text = trim($text);
        if (preg_match('/^(\S+)\s+as\s+(\S+)$/i', $text, $m)) {
            $uses[$m[2]] = ltrim($m[1], '\\');
        } else {
            $uses[substr($text, (int) strrpos('\\' . $text, '\\'))] = ltrim($text, '\\');
        }
    }
    return $uses;
}

function resolve_type(string $type, array $uses): string
{
    $type = trim($type);
    if ($type === '') {
        return '';
    }
    $nullable = str_starts_with($type, '?');
    $parts = preg_split('/\s*\|\s*/', ltrim($type, '?'));
    $out = [];
    foreach ($parts as $p) {
        $lower = strtolower($p);
        if (in_array($lower, ['string', 'int', 'float', 'bool', 'array', 'mixed', 'void', 'null', 'callable', 'iterable', 'object', 'never', 'self', 'static', 'false', 'true'], true)) {
            $out[] = $lower;
        } elseif (str_starts_with($p, '\\')) {
            $out[] = ltrim($p, '\\');
        } else {
            $first = explode('\\', $p)[0];
            $out[] = isset($uses[$first]) ? $uses[$first] . substr($p, strlen($first)) : 'Queuety\\' . $p;
        }
    }
    if ($nullable) {
        $out[] = 'null';
    }
    sort($out);
    return implode('|', array_unique($out));
}

function resolve_default(?string $default, array $uses): ?string
{
    if ($default === null) {
        return null;
    }
    $default = trim($default);
    if (preg_match('/^array\s*\(\s*\)$/i', $default)) {
        return '[]';
    }
    if (preg_match('/^([A-Za-z_\\\\][A-Za-z0-9_\\\\]*)::([A-Za-z_][A-Za-z0-9_]*)$/', $default, $m)) {
        return resolve_type($m[1], $uses) . '::' . $m[2];
    }
    return strtolower($default) === 'null' ? 'null' : $default;
}

/** @return list<array<string, mixed>> */
function methods(string $code): array
{
    $tokens = token_get_all($code);
    $uses = uses($tokens);
    $methods = [];
    $n = count($tokens);
    for ($i = 0; $i < $n; $i++) {
        if (!is_array($tokens[$i]) || $tokens[$i][0] !== T_FUNCTION) {
            continue;
        }
        // Modifiers before `function`.
        $mods = [];
        for ($j = $i - 1; $j >= 0; $j--) {
            $t = $tokens[$j];
            if (is_array($t) && in_array($t[0], [T_WHITESPACE, T_COMMENT, T_DOC_COMMENT], true)) {
                continue;
            }
            if (is_array($t) && in_array($t[0], [T_PUBLIC, T_PROTECTED, T_PRIVATE, T_STATIC, T_FINAL, T_ABSTRACT], true)) {
                $mods[] = strtolower($t[1]);
                continue;
            }
            break;
        }
        if (!in_array('public', $mods, true)) {
            continue;
        }
        // The name: the first token that is not space (`catch` and `finally`
        // are keyword tokens, not T_STRING).
        for ($i++; is_array($tokens[$i]) && $tokens[$i][0] === T_WHITESPACE; $i++);
        $name = is_array($tokens[$i]) ? $tokens[$i][1] : $tokens[$i];
        for (; $tokens[$i] !== '('; $i++);
        // Parameters: split the text between the parentheses at depth-0 commas.
        $depth = 0;
        $params = [];
        $cur = '';
        for ($i++; $i < $n; $i++) {
            $t = $tokens[$i];
            $s = is_array($t) ? $t[1] : $t;
            if (is_array($t) && in_array($t[0], [T_COMMENT, T_DOC_COMMENT], true)) {
                continue;
            }
            if ($s === '(' || $s === '[') {
                $depth++;
            } elseif ($s === ')' || $s === ']') {
                if ($depth === 0) {
                    break;
                }
                $depth--;
            } elseif ($s === ',' && $depth === 0) {
                $params[] = $cur;
                $cur = '';
                continue;
            }
            $cur .= $s;
        }
        $params[] = $cur;
        $return = '';
        for ($i++; $tokens[$i] !== '{' && $tokens[$i] !== ';'; $i++) {
            $return .= is_array($tokens[$i]) ? $tokens[$i][1] : $tokens[$i];
        }
        $return = trim(ltrim(trim($return), ':'));
        $ps = [];
        foreach ($params as $p) {
            $p = trim(preg_replace('/\s+/', ' ', $p));
            if ($p === '') {
                continue;
            }
            if (!preg_match('/^(?:(?:public|private|protected|readonly)\s+)*(.*?)\s*(\.\.\.)?\s*&?\$([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.*))?$/s', $p, $m)) {
                throw new RuntimeException("cannot parse parameter '{$p}' of {$name}");
            }
            $ps[] = [
                'name' => $m[3],
                'type' => resolve_type($m[1], $uses),
                'variadic' => $m[2] === '...',
                'default' => resolve_default(isset($m[4]) && $m[4] !== '' ? $m[4] : null, $uses),
            ];
        }
        $methods[] = [
            'name' => $name,
            'static' => in_array('static', $mods, true),
            'params' => $ps,
            'return' => resolve_type($return, $uses),
        ];
    }
    return $methods;
}

$api = ['plugin' => 'inline0/queuety', 'commit' => trim((string) shell_exec(sprintf('git --git-dir=%s rev-parse %s 2>/dev/null', escapeshellarg($source), escapeshellarg($commit)))), 'classes' => []];
$total = 0;
foreach (CLASSES as $class) {
    $methods = methods(plugin_file($source, $commit, "src/{$class}.php"));
    $api['classes'][$class] = $methods;
    $total += count($methods);
}
$api['total'] = $total;
$out = dirname(__DIR__) . '/fixtures/plugin-api.json';
file_put_contents($out, json_encode($api, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES) . "\n");
fprintf(STDERR, "%d methods written to %s\n", $total, $out);
