<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * A step that yields chunks and is resumed from the ones already stored.
 */
interface StreamingStep
{
    /**
     * @param array<string, mixed> $state
     * @param array<int, mixed>    $existing_chunks
     */
    public function stream(array $state, array $existing_chunks = []): \Generator;

    /**
     * @param array<int, mixed>    $chunks
     * @param array<string, mixed> $state
     * @return array<string, mixed>
     */
    public function on_complete(array $chunks, array $state): array;

    /**
     * @return array<string, mixed>
     */
    public function config(): array;
}
