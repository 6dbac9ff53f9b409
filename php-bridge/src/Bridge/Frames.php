<?php

declare(strict_types=1);

namespace Queuety\Bridge;

/**
 * The pool protocol's framing: a 4-byte big-endian length, then one JSON
 * object of that many bytes (at most MAX_FRAME).
 */
final class Frames
{
    public const MAX_FRAME = 64 * 1024 * 1024;

    /**
     * The next frame's body, or null at a clean end of stream.
     *
     * @param resource $stream
     * @throws \RuntimeException On a stream cut inside a frame or an oversized length.
     */
    public static function read($stream): ?string
    {
        $header = self::read_exactly($stream, 4);
        if ($header === null) {
            return null;
        }
        $length = unpack('N', $header)[1];
        if ($length > self::MAX_FRAME) {
            throw new \RuntimeException("Frame length {$length} exceeds the " . self::MAX_FRAME . '-byte limit.');
        }
        if ($length === 0) {
            return '';
        }
        $body = self::read_exactly($stream, $length);
        if ($body === null) {
            throw new \RuntimeException('The daemon closed the stream inside a frame.');
        }
        return $body;
    }

    /**
     * Encode and send one message in a single write.
     *
     * @param resource     $stream
     * @param array<mixed> $message
     * @throws \JsonException When the message cannot be encoded with $flags.
     * @throws \RuntimeException When the daemon is gone.
     */
    public static function write($stream, array $message, int $flags = 0): void
    {
        $body = json_encode($message, $flags | JSON_THROW_ON_ERROR);
        if (strlen($body) > self::MAX_FRAME) {
            throw new \RuntimeException('Message of ' . strlen($body) . ' bytes exceeds the ' . self::MAX_FRAME . '-byte frame limit.');
        }
        $data = pack('N', strlen($body)) . $body;
        for ($written = 0; $written < strlen($data); $written += $n) {
            $n = fwrite($stream, substr($data, $written));
            if ($n === false || $n === 0) {
                throw new \RuntimeException('Cannot write to the daemon: the response pipe is closed.');
            }
        }
        fflush($stream);
    }

    /**
     * $length bytes, or null if the stream ends before the first one.
     *
     * @param resource $stream
     */
    private static function read_exactly($stream, int $length): ?string
    {
        $data = '';
        while (strlen($data) < $length) {
            $chunk = fread($stream, $length - strlen($data));
            // A blocking pipe yields '' only at its end.
            if ($chunk === false || $chunk === '') {
                if ($data === '') {
                    return null;
                }
                throw new \RuntimeException('The daemon closed the stream inside a frame.');
            }
            $data .= $chunk;
        }
        return $data;
    }
}
