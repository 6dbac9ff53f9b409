<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The bridge keeps the plugin's whole fluent API: every public method of
 * the plugin's Queuety facade and builders, as listed in
 * fixtures/plugin-api.json (written from the plugin's source by
 * tools/plugin-api.php), exists here with a compatible signature: same
 * static-ness, the plugin's parameters in order with the same names,
 * types and defaults (the bridge may add optional ones at the end), and
 * the same return type. Constructors are only required to exist: the
 * facade builds the builders with the bridge's own services.
 */
final class PluginApiTest extends TestCase
{
    /** @return array<string, mixed> */
    private static function api(): array
    {
        $api = json_decode((string) file_get_contents(__DIR__ . '/fixtures/plugin-api.json'), true, 512, JSON_THROW_ON_ERROR);
        self::assertIsArray($api);
        return $api;
    }

    public function test_the_list_is_the_plugins_202_methods(): void
    {
        $api = self::api();
        $counts = array_map('count', $api['classes']);
        $this->assertSame([
            'Queuety' => 113, 'WorkflowBuilder' => 43, 'PendingJob' => 14, 'ChainBuilder' => 4,
            'BatchBuilder' => 8, 'PendingSchedule' => 7, 'StateMachineBuilder' => 13,
        ], $counts);
        $this->assertSame(202, $api['total']);
        $this->assertSame(202, array_sum($counts));
    }

    public function test_the_bridge_has_every_method_with_a_compatible_signature(): void
    {
        $missing = [];
        $checked = 0;
        foreach (self::api()['classes'] as $class => $methods) {
            $fqcn = 'Queuety\\' . $class;
            foreach ($methods as $m) {
                $where = "{$class}::{$m['name']}";
                if (!class_exists($fqcn) || !method_exists($fqcn, $m['name'])) {
                    $missing[] = "{$where}: missing";
                    continue;
                }
                $r = new \ReflectionMethod($fqcn, $m['name']);
                if (!$r->isPublic()) {
                    $missing[] = "{$where}: not public";
                    continue;
                }
                $checked++;
                if (in_array($m['name'], ['__construct', '__destruct'], true)) {
                    continue;
                }
                foreach (self::differences($r, $m) as $d) {
                    $missing[] = "{$where}: {$d}";
                }
            }
        }
        $this->assertSame([], $missing);
        $this->assertSame(202, $checked);
    }

    /**
     * @param array<string, mixed> $m
     * @return list<string>
     */
    private static function differences(\ReflectionMethod $r, array $m): array
    {
        $d = [];
        if ($r->isStatic() !== $m['static']) {
            $d[] = $m['static'] ? 'not static' : 'static';
        }
        $params = $r->getParameters();
        foreach ($m['params'] as $i => $p) {
            $b = $params[$i] ?? null;
            if ($b === null) {
                $d[] = "no parameter \${$p['name']}";
                continue;
            }
            if ($b->getName() !== $p['name']) {
                $d[] = "parameter {$i} is \${$b->getName()}, not \${$p['name']}";
            }
            if (self::type($b->getType()) !== $p['type']) {
                $d[] = "\${$p['name']} is " . self::type($b->getType()) . ", not {$p['type']}";
            }
            if ($b->isVariadic() !== $p['variadic']) {
                $d[] = "\${$p['name']} variadic differs";
            }
            if ($p['default'] !== null) {
                if (!$b->isDefaultValueAvailable()) {
                    $d[] = "\${$p['name']} has no default (plugin: {$p['default']})";
                } elseif (!self::same_default($b, $p['default'])) {
                    $d[] = "\${$p['name']} defaults to " . var_export($b->getDefaultValue(), true) . ", not {$p['default']}";
                }
            }
        }
        foreach (array_slice($params, count($m['params'])) as $extra) {
            if (!$extra->isOptional()) {
                $d[] = "extra required parameter \${$extra->getName()}";
            }
        }
        if (self::type($r->getReturnType()) !== $m['return']) {
            $d[] = 'returns ' . self::type($r->getReturnType()) . ", not {$m['return']}";
        }
        return $d;
    }

    private static function type(?\ReflectionType $t): string
    {
        if ($t === null) {
            return '';
        }
        $names = $t instanceof \ReflectionUnionType
            ? array_map(static fn (\ReflectionNamedType $n) => $n->getName(), $t->getTypes())
            : [$t instanceof \ReflectionNamedType ? $t->getName() : (string) $t];
        if ($t->allowsNull() && !in_array('null', $names, true) && !in_array('mixed', $names, true)) {
            $names[] = 'null';
        }
        $names = array_map(static fn (string $n) => in_array(strtolower($n), ['string', 'int', 'float', 'bool', 'array', 'mixed', 'void', 'null', 'callable', 'iterable', 'object', 'never', 'self', 'static', 'false', 'true'], true) ? strtolower($n) : ltrim($n, '\\'), $names);
        sort($names);
        return implode('|', array_unique($names));
    }

    private static function same_default(\ReflectionParameter $b, string $plugin): bool
    {
        if (str_contains($plugin, '::')) {
            $value = $b->getDefaultValue();
            return $value instanceof \UnitEnum && ltrim($value::class, '\\') . '::' . $value->name === $plugin;
        }
        // The plugin's default is a literal (a string, number, bool, null or []).
        $expected = eval("return {$plugin};");
        return $b->getDefaultValue() === $expected;
    }
}
