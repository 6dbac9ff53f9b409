<?php
/**
 * The handlers of the poolset tests' sites. Each site's bootstrap
 * (written by the test in a directory named for the site) defines
 * POOLSET_SITE and includes this file; every process start and every job
 * appends a line to a file, so a test counts starts and runs.
 */

declare(strict_types=1);

use Queuety\Bridge\Handlers;

file_put_contents(POOLSET_DIR . '/starts', POOLSET_SITE . ' ' . getmypid() . "\n", FILE_APPEND | LOCK_EX);

function poolset_ran(array $p): void
{
    file_put_contents(POOLSET_DIR . '/ran', POOLSET_SITE . ' ' . $p['n'] . ' ' . getmypid() . "\n", FILE_APPEND | LOCK_EX);
}

Handlers::register('record', static function (array $p): void {
    poolset_ran($p);
});

// Waits (up to a minute) for the file payload "gate" to exist.
Handlers::register('gate', static function (array $p): void {
    for ($i = 0; $i < 6000 && !file_exists($p['gate']); $i++) {
        usleep(10000);
    }
    poolset_ran($p);
});
