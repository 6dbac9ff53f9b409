<?php
// Live interop check for TestPHPAndGoShareRows: PHP 8 writes a job the way
// Queuety's Queue::dispatch does, and checks the rows Go wrote, byte for
// byte, with PHP's own json_encode and hash. Usage:
//   php interop.php dispatch|verify <host> <port> <db> <jobs_table> [ids...]
declare(strict_types=1);

[$self, $mode, $host, $port, $db, $table] = array_slice($argv, 0, 6);
$pdo = new PDO("mysql:host=$host;port=$port;dbname=$db;charset=utf8mb4", 'root', '', [
    PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
    PDO::ATTR_EMULATE_PREPARES => false,
]);

if ($mode === 'dispatch') {
    // Queue::dispatch's INSERT: payload json_encode'd with default flags,
    // payload_hash only for unique jobs, available_at from gmdate().
    $payload = ['to' => 'zoë@example.com', 'url' => 'https://x/y', 'n' => 1.0, 'tags' => [], 'big' => 9007199254740993];
    $json = json_encode($payload, JSON_THROW_ON_ERROR);
    $stmt = $pdo->prepare("INSERT INTO `$table` (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, cost_units)
        VALUES ('default', 'php_dispatched', :payload, :hash, 1, 'pending', 3, :available, 1)");
    $stmt->execute(['payload' => $json, 'hash' => hash('sha256', $json), 'available' => gmdate('Y-m-d H:i:s')]);
    echo $pdo->lastInsertId(), "\n";
    exit(0);
}

// verify: every given job must be completed, its payload must re-encode to
// the same bytes in PHP, and a stored hash must be PHP's sha256 of them.
$fail = 0;
foreach (array_slice($argv, 6) as $id) {
    $row = $pdo->query("SELECT * FROM `$table` WHERE id = " . (int) $id)->fetch(PDO::FETCH_ASSOC);
    if (!$row) { echo "job $id: missing\n"; $fail++; continue; }
    $decoded = json_decode($row['payload'], true, 512, JSON_THROW_ON_ERROR);
    if (json_encode($decoded) !== $row['payload']) { echo "job $id: payload bytes differ from PHP's encoding\n"; $fail++; }
    if ($row['payload_hash'] !== null && $row['payload_hash'] !== hash('sha256', $row['payload'])) { echo "job $id: payload_hash is not PHP's\n"; $fail++; }
    if ($row['status'] !== 'completed' || (int) $row['attempts'] !== 1 || $row['completed_at'] === null) {
        echo "job $id: status {$row['status']} attempts {$row['attempts']}\n"; $fail++;
    }
}
echo $fail === 0 ? "ok\n" : "failed\n";
exit($fail === 0 ? 0 : 1);
