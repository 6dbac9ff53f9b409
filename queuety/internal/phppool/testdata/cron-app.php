<?php
/**
 * The cron test's application (cron_cli_test.go): PHP job classes,
 * three workflow step classes and a batch callback, each with config(),
 * so every row waits for its class's settings on a fresh pool. Every run
 * appends "<class>:<key>" to the file named by CRON_RUNS, so the test
 * counts handler runs.
 */

declare(strict_types=1);

use Queuety\Batch;

function cron_run(string $what): void
{
    file_put_contents((string) getenv('CRON_RUNS'), $what . "\n", FILE_APPEND | LOCK_EX);
}

final class CronJob implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        cron_run('CronJob:' . $payload['k']);
        usleep(20_000);
    }

    public function config(): array
    {
        return ['max_attempts' => 2];
    }
}

abstract class CronStep implements Queuety\Step
{
    public function handle(array $state): array
    {
        cron_run(static::class . ':' . $state['wf']);
        return [static::class => true];
    }

    public function config(): array
    {
        return ['max_attempts' => 4, 'cost_units' => 2];
    }
}

final class CronStepA extends CronStep
{
}

final class CronStepB extends CronStep
{
}

final class CronStepC extends CronStep
{
}

final class CronBatchThen
{
    public function handle(Batch $batch): void
    {
        cron_run('CronBatchThen:' . $batch->id);
    }
}
