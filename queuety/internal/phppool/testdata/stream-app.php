<?php
/**
 * The streaming_step_artifacts recording's step classes (shared with
 * StreamingDaemonTest), for TestReplayStreamingStepArtifacts; the facade
 * uses the test database named in QUEUETY_TEST_DB_* (chunks and artifacts
 * are written from PHP).
 */

declare(strict_types=1);

require __DIR__ . '/../../../../php-bridge/tests/fixtures/stream-classes.php';

// The recording's first step is the plugin fixture's IncStep: the same
// step under the recorded name, so the recorded rows load unchanged.
class_alias(StreamIncStep::class, 'IncStep');

Queuety\Queuety::init(new Queuety\Connection(
    (string) getenv('QUEUETY_TEST_DB_ADDR'),
    (string) getenv('QUEUETY_TEST_DB_NAME'),
    (string) getenv('QUEUETY_TEST_DB_USER'),
    (string) getenv('QUEUETY_TEST_DB_PASSWORD'),
));
