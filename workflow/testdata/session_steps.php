<?php
/**
 * The PHP twin of sessionWorkflow() in ../builder_session_test.go, built
 * with the bridge's WorkflowBuilder (no database needed). Prints, one JSON
 * document a line: the `_steps` list, then for steps 1..5 the queue and
 * worker_session column the bridge would give the step's first job.
 *
 *     php workflow/testdata/session_steps.php php-bridge/autoload.php
 */

declare(strict_types=1);

use Queuety\Enums\ForEachMode;
use Queuety\Enums\Priority;
use Queuety\StepDispatchOptions;
use Queuety\WorkerSessionOptions;
use Queuety\WorkflowBuilder;

require $argv[1];

$b = (new WorkflowBuilder('render'))->on_queue('default')->then('PlanFrames');
$gpu = $b->worker_session('gpu-render', new WorkerSessionOptions(
    queue: 'gpu-activities',
    requirements: ['gpu:nvidia-l4', ' gpu:nvidia-l4 ', 'fs:/mnt/models'],
    leaseSeconds: 120,
    ttlSeconds: 1800,
    maxConcurrentActivities: 1,
));
$gpu->then('RenderFramesActivity', 'render')
    ->then('AssembleManifestActivity')->compensate_with('DropManifest')
    ->for_each('frames', 'EncodeFrame', 'encoded', ForEachMode::Quorum, 2)
    ->parallel(['UploadA', 'UploadB']);
$b->worker_session(' cpu ', new WorkerSessionOptions(connection: 'redis', createIfMissing: false, allowReacquireAfterFailure: false))
    ->then('Thumbnail');
$b->then('Publish');

$steps = $b->build_steps();
echo json_encode($steps, JSON_THROW_ON_ERROR), "\n";
foreach ([1, 2, 3, 4, 5] as $i) {
    $def = $steps[$i];
    if ($def['type'] === 'parallel') {
        $def = StepDispatchOptions::merge_parallel_branch($def, StepDispatchOptions::parallel_branches($def)[0]);
    }
    $o = StepDispatchOptions::resolve($def, $def['class'], 'default', Priority::Low, 3, [], 1, $def['worker_session']);
    echo json_encode(['step' => $i, 'queue' => $o['queue'], 'session_id' => $o['session_id'], 'worker_session' => $o['worker_session']], JSON_THROW_ON_ERROR), "\n";
}
