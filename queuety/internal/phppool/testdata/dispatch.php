<?php
/**
 * Dispatches jobs with the PHP bridge, for the end-to-end tests: the rows
 * come from PHP, exactly as an application would write them. Usage:
 *   php dispatch.php <host:port> <database> <user> <password> '<json list of jobs>'
 * where a job is {"handler": ..., "payload": {...}, "max_attempts": n}.
 * Prints the new job ids, one per line.
 */

declare(strict_types=1);

require __DIR__ . '/../../../../php-bridge/autoload.php';

use Queuety\Connection;
use Queuety\Queuety;

[, $host, $database, $user, $password, $jobs] = $argv;
Queuety::init(new Connection($host, $database, $user, $password));

foreach (json_decode($jobs, true, 512, JSON_THROW_ON_ERROR) as $job) {
    $pending = Queuety::dispatch($job['handler'], $job['payload'] ?? []);
    if (isset($job['max_attempts'])) {
        $pending->max_attempts($job['max_attempts']);
    }
    echo $pending->id(), "\n";
}
