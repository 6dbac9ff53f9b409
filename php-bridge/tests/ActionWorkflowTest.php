<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Queuety::on_action() where WordPress's add_action() exists: the hook
 * starts the workflow (a template by name, or a builder) with the mapped
 * payload and idempotency key, as the plugin's ActionWorkflowBridge does.
 * A separate process, so the stand-in add_action() is seen by no other test.
 *
 * @runTestsInSeparateProcesses
 * @preserveGlobalState disabled
 */
final class ActionWorkflowTest extends DatabaseTestCase
{
    public function test_a_fired_action_starts_the_workflow_once_per_key(): void
    {
        require_once __DIR__ . '/fixtures/wordpress-actions.php';
        Queuety::register_workflow_template(Queuety::define_workflow('welcome')->then('SendWelcome'));
        Queuety::on_action(
            'user_register',
            'welcome',
            map: static fn (int $user_id, array $data): array => ['user_id' => $user_id, 'email' => $data['email']],
            when: static fn (int $user_id): bool => $user_id > 0,
            idempotency_key: static fn (int $user_id): string => "welcome:{$user_id}",
        );
        Queuety::on_action('order_paid', Queuety::workflow('receipt')->then('SendReceipt'));

        $this->assertSame([['user_register', 10, 2], ['order_paid', 10, 1]], array_map(
            static fn (array $a): array => [$a['hook'], $a['priority'], $a['accepted_args']],
            \wp_stub_actions(),
        ), 'accepted_args from the widest callback');

        \wp_stub_do_action('user_register', 7, ['email' => 'a@b.c']);
        \wp_stub_do_action('user_register', 7, ['email' => 'a@b.c']);
        \wp_stub_do_action('user_register', 0, ['email' => 'skip@b.c']);
        \wp_stub_do_action('order_paid', 'o-1');

        $rows = $this->conn->pdo()->query('SELECT name, state FROM wp_queuety_workflows ORDER BY id')->fetchAll(PDO::FETCH_NUM);
        $this->assertSame(['welcome', 'receipt'], array_column($rows, 0), 'once per key; when() false starts none');
        $welcome = json_decode($rows[0][1], true);
        $this->assertSame([7, 'a@b.c', 'welcome:7'], [$welcome['user_id'], $welcome['email'], $welcome['_idempotency_key']]);
        $receipt = json_decode($rows[1][1], true);
        $this->assertSame(['order_paid', ['o-1']], [$receipt['trigger_hook'], $receipt['hook_args']]);

        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('Action workflow payload keys cannot start with "_".');
        Queuety::on_action('bad', 'welcome', map: static fn (): array => ['_x' => 1]);
        \wp_stub_do_action('bad');
    }
}
