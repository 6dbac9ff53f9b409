<?php
// A PHP worker for the chaos suite's mixed fleet. It claims, runs,
// completes and logs the way the Queuety plugin's worker does
// (Queue::claim: SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE to
// processing with attempts + 1, committed; Worker::process_job: a `started`
// log row, the handler, Queue::complete, a `completed` log row), with the
// suite's handler inline: it records the run in chaos_runs.
//
// Environment: CHAOS_HOST, CHAOS_PORT, CHAOS_DB, CHAOS_WORKER (its name in
// chaos_runs), CHAOS_IDLE_EXIT (seconds without a job before it exits).

$host = getenv('CHAOS_HOST') ?: '127.0.0.1';
$port = getenv('CHAOS_PORT') ?: '3306';
$db = getenv('CHAOS_DB');
$worker = getenv('CHAOS_WORKER') ?: 'php';
$idleExit = (float) (getenv('CHAOS_IDLE_EXIT') ?: '2');
$jobs = 'wp_queuety_jobs';
$logs = 'wp_queuety_logs';

$pdo = new PDO("mysql:host={$host};port={$port};dbname={$db};charset=utf8mb4", 'root', '', [
    PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
    PDO::ATTR_DEFAULT_FETCH_MODE => PDO::FETCH_ASSOC,
]);
$pdo->exec("SET time_zone = '+00:00'");

$claimSelect = $pdo->prepare(
    "SELECT * FROM {$jobs}
    WHERE status = 'pending' AND queue = 'default' AND available_at <= NOW()
    ORDER BY priority DESC, id ASC
    LIMIT 1
    FOR UPDATE SKIP LOCKED"
);
$claimUpdate = $pdo->prepare(
    "UPDATE {$jobs} SET status = 'processing', reserved_at = NOW(), attempts = attempts + 1 WHERE id = :id"
);
$complete = $pdo->prepare("UPDATE {$jobs} SET status = 'completed', completed_at = NOW() WHERE id = :id");
$log = $pdo->prepare(
    "INSERT INTO {$logs} (job_id, handler, queue, event, attempt, duration_ms)
    VALUES (:job_id, :handler, :queue, :event, :attempt, :duration_ms)"
);
$record = $pdo->prepare(
    "INSERT INTO chaos_runs (token, job_id, pid, attempt, worker) VALUES (:token, :job_id, :pid, :attempt, :worker)"
);

$ran = 0;
$idleSince = microtime(true);
while (true) {
    $pdo->beginTransaction();
    try {
        $claimSelect->execute();
        $row = $claimSelect->fetch();
        $claimSelect->closeCursor();
        if (!$row) {
            $pdo->rollBack();
            if (microtime(true) - $idleSince >= $idleExit) {
                break;
            }
            usleep(50000);
            continue;
        }
        $claimUpdate->execute(['id' => $row['id']]);
        $pdo->commit();
    } catch (Throwable $e) {
        if ($pdo->inTransaction()) {
            $pdo->rollBack();
        }
        fwrite(STDERR, "claim: {$e->getMessage()}\n");
        usleep(50000);
        continue;
    }
    $idleSince = microtime(true);
    $attempt = (int) $row['attempts'] + 1;
    $start = hrtime(true);
    $log->execute(['job_id' => $row['id'], 'handler' => $row['handler'], 'queue' => $row['queue'],
        'event' => 'started', 'attempt' => $attempt, 'duration_ms' => null]);
    // The handler.
    $record->execute(['token' => bin2hex(random_bytes(8)), 'job_id' => $row['id'], 'pid' => getmypid(),
        'attempt' => $attempt, 'worker' => $worker]);
    usleep(random_int(1000, 5000));
    $duration = (int) ((hrtime(true) - $start) / 1000000);
    $complete->execute(['id' => $row['id']]);
    $log->execute(['job_id' => $row['id'], 'handler' => $row['handler'], 'queue' => $row['queue'],
        'event' => 'completed', 'attempt' => $attempt, 'duration_ms' => $duration]);
    $ran++;
}
fwrite(STDOUT, "ran {$ran}\n");
