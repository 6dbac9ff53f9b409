<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\Priority;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * The bridge writes the rows the real plugin wrote for the same dispatch
 * code: testdata/queuety-plugin, recorded from Queuety v0.22.0
 * (each fixture's "code" field is the PHP that produced it).
 */
final class FixtureRowsTest extends DatabaseTestCase
{
    /** Columns that hold times: compared by presence (and delay) only. */
    private const TIMES = ['available_at', 'reserved_at', 'completed_at', 'failed_at', 'created_at'];

    public function test_payload_encoding_matches_the_plugin_byte_for_byte(): void
    {
        $fixture = self::fixture('job_payload_encoding.json');
        // "Queuety::dispatch('noop', [unicode, slashes, floats, big int,
        // empty arrays, html chars])->with_priority(Priority::High)->unique()->id()"
        Queuety::dispatch('noop', [
            'text' => "h\u{e9}llo \u{2713} \u{1F600}",
            'path' => 'a/b\\c',
            'html' => "<a href='x'>&</a>",
            'one' => 1,
            'tenth' => 0.1,
            'big' => 9007199254740993,
            'neg' => -5,
            'empty' => [],
            'list' => [1, 2],
            'map' => ['k' => null, 't' => true],
            'nested' => ['e' => []],
        ])->with_priority(Priority::High)->unique()->id();
        Queuety::dispatch('noop')->id();

        $this->assertRowsMatch($fixture['snapshots'][0]['jobs']);
        $this->assertSame(hash('sha256', $this->job(1)['payload']), $this->job(1)['payload_hash']);
    }

    public function test_depends_on_matches_the_plugin(): void
    {
        $fixture = self::fixture('job_depends_on.json');
        $a = Queuety::dispatch('noop', ['step' => 'a'])->id();
        Queuety::dispatch('noop', ['step' => 'b'])->after($a)->id();

        $this->assertRowsMatch($fixture['snapshots'][0]['jobs']);
    }

    /**
     * @param list<array<string, mixed>> $want
     */
    private function assertRowsMatch(array $want): void
    {
        foreach ($want as $expected) {
            $row = $this->job((int) $expected['id']);
            $this->assertSame(array_keys($expected), array_slice(array_keys($row), 0, count($expected)), "the plugin's columns, in order");
            $this->assertNull($row['reserved_by'] ?? null, "the daemon's additive column is left alone");
            foreach ($expected as $column => $value) {
                if (in_array($column, self::TIMES, true)) {
                    $this->assertSame($value === null, $row[$column] === null, "job {$expected['id']} {$column} presence");
                    continue;
                }
                $this->assertSame($value === null ? null : (string) $value, $row[$column], "job {$expected['id']} column {$column}");
            }
            // The plugin dispatched without delay: available_at is "now" in UTC.
            $this->assertEqualsWithDelta(time(), strtotime($row['available_at'] . ' UTC'), 2, 'available_at from gmdate()');
        }
    }

    /**
     * @return array<string, mixed>
     */
    private static function fixture(string $name): array
    {
        $path = dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name;
        self::assertFileExists($path, 'plugin fixture');
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
