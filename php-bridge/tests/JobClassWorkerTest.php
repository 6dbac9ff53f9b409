<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PHPUnit\Framework\TestCase;
use Queuety\Bridge\JobClasses;
use Queuety\JobSerializer;
use Queuety\Tests\Support\WorkerProcess;

require_once __DIR__ . '/fixtures/job-classes.php';

/**
 * Contracts\Job rows in the worker: the result frame carries the class's
 * $tries and $backoff entry for the attempt, so the daemon retries and
 * buries by them; rows are read as the plugin's JobSerializer reads them.
 */
final class JobClassWorkerTest extends TestCase
{
    public function test_failures_report_the_class_retry_settings(): void
    {
        $worker = new WorkerProcess(['--bootstrap', __DIR__ . '/fixtures/job-worker-app.php']);
        try {
            $this->assertSame('ready', $worker->read()['type']);

            $worker->run('E2eBackoffJob', ['n' => 1], 1);
            $result = $worker->read();
            $this->assertSame('backoff (1)', $result['error']['message']);
            $this->assertSame(['max_attempts' => 2, 'backoff' => 7], $result['retry']);

            $worker->run('E2eBackoffJob', ['n' => 1], 3);
            $this->assertSame(['max_attempts' => 2, 'backoff' => 30], $worker->read()['retry'], 'the last entry repeats');

            $worker->run('E2eFetchJob', []);
            $result = $worker->read();
            $this->assertSame("Missing required parameter 'n' for job class E2eFetchJob.", $result['error']['message']);
            $this->assertSame(['max_attempts' => 5], $result['retry'], 'no $backoff: the daemon keeps its own');

            $worker->run('E2eFetchJob', ['n' => 9, 'colour' => 'blue', '__ignored' => 1]);
            $result = $worker->read();
            $this->assertTrue($result['ok']);
            $this->assertArrayNotHasKey('retry', $result, 'nothing to report on success');
        } finally {
            $worker->finish();
        }
    }

    /**
     * A metadata request for a Contracts\Job class carries its own
     * $tries, $timeout and $backoff under "job" (the daemon's time limit
     * and stale sweep need them before any attempt has run); another
     * class has no "job".
     */
    public function test_metadata_of_a_job_class_carries_its_properties(): void
    {
        $worker = new WorkerProcess(['--bootstrap', __DIR__ . '/fixtures/job-worker-app.php']);
        try {
            $this->assertSame('ready', $worker->read()['type']);
            $worker->metadata('E2eBackoffJob');
            $job = $worker->read()['output']['job'];
            $this->assertSame(['tries' => 2, 'timeout' => null, 'backoff' => [7, 30]],
                ['tries' => $job['tries'], 'timeout' => $job['timeout'], 'backoff' => $job['backoff']]);
            $worker->metadata('NoSuchClass');
            $this->assertArrayNotHasKey('job', $worker->read()['output']);
        } finally {
            $worker->finish();
        }
    }

    public function test_timeout_property_and_middleware_interrupt_the_job(): void
    {
        $worker = new WorkerProcess(['--bootstrap', __DIR__ . '/fixtures/job-worker-app.php']);
        try {
            $this->assertSame('ready', $worker->read()['type']);
            foreach (['E2eSlowJob', 'E2eSlowMiddlewareJob'] as $class) {
                $worker->run($class);
                $error = $worker->read()['error'];
                $this->assertSame('Queuety\\Exceptions\\TimeoutException', $error['class'], $class);
                $this->assertSame('Job exceeded maximum execution time of 1 seconds.', $error['message'], $class);
            }
            $worker->run('E2eFetchJob', ['n' => 1]);
            $this->assertTrue($worker->read()['ok'], 'the alarm was cleared: the next job runs');
        } finally {
            $worker->finish();
        }
    }

    public function test_serialize_and_metadata_follow_the_plugin(): void
    {
        $this->assertSame(
            ['handler' => 'E2eBackoffJob', 'payload' => ['n' => 4]],
            JobSerializer::serialize(new \E2eBackoffJob(4)),
            'tries and backoff are settings, not payload',
        );
        $job = JobSerializer::deserialize('E2eFetchJob', ['n' => 3, 'colour' => 'blue']);
        $this->assertInstanceOf(\E2eFetchJob::class, $job);
        $this->assertSame(\E2eColour::Blue, $job->colour);
        $this->assertSame(['x'], JobSerializer::deserialize('E2eFetchJob', ['n' => 3, 'tags' => ['x']])->tags);

        $meta = JobClasses::metadata('E2eBackoffJob');
        $this->assertSame(2, $meta['tries']);
        $this->assertSame([7, 30], $meta['backoff']);
        $this->assertNull($meta['timeout']);
        $this->assertTrue(JobClasses::is_job_class('E2eBackoffJob'));
        $this->assertFalse(JobClasses::is_job_class('stdClass'));

        $this->expectExceptionMessage('Job class not found: Nope');
        JobSerializer::deserialize('Nope', []);
    }
}
