<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

/**
 * ../workflow/testdata/golden.jsonl: what the real plugin's builder wrote
 * (or threw) for the chains in gen_golden.php, one case per line.
 */
final class Golden
{
    /** @var array<string, array<string, mixed>>|null */
    private static ?array $cases = null;

    /**
     * @return array<string, array<string, mixed>>
     */
    public static function cases(): array
    {
        if (self::$cases === null) {
            self::$cases = [];
            $path = dirname(__DIR__, 3) . '/workflow/testdata/golden.jsonl';
            foreach (file($path, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
                $case = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
                self::$cases[$case['case']] = $case;
            }
        }
        return self::$cases;
    }

    /**
     * The names of one kind's cases, as a data provider.
     *
     * @return array<string, array{string}>
     */
    public static function names(string $kind): array
    {
        $names = [];
        foreach (self::cases() as $name => $line) {
            if ($line['kind'] === $kind) {
                $names[$name] = [$name];
            }
        }
        return $names;
    }
}
