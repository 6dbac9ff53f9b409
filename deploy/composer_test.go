package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestComposerBridge installs php-bridge/ with Debian's composer, as an
// application would require it (a path repository, copied, Packagist off,
// no network), into a scratch application; the application's code, loaded
// through vendor/autoload.php, dispatches a job and a two-step workflow of
// its own classes; the daemon (the release's binary) runs them with its PHP
// pool started as vendor/bin/queuety-php-worker. Every row completes.
func TestComposerBridge(t *testing.T) {
	t.Parallel()
	rel := releaseForHost(t)
	dsn := testdb.New(t)
	bridge, err := filepath.Abs(filepath.Join("..", "php-bridge"))
	require.NoError(t, err)

	app := t.TempDir()
	manifest, err := json.MarshalIndent(map[string]any{
		"name":    "example/site",
		"type":    "project",
		"require": map[string]string{"queuety-go/php-bridge": "*"},
		"repositories": []any{
			map[string]any{"type": "path", "url": bridge, "options": map[string]any{"symlink": false}},
			map[string]any{"packagist.org": false},
		},
		"minimum-stability": "dev",
		"autoload":          map[string]any{"psr-4": map[string]string{"Site\\": "src/"}},
	}, "", "    ")
	require.NoError(t, err)
	write := func(name, body string) {
		t.Helper()
		path := filepath.Join(app, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	write("composer.json", string(manifest))
	write("src/SendReceipt.php", `<?php
namespace Site;

final class SendReceipt implements \Queuety\Handler
{
    public function handle(array $payload): void
    {
        file_put_contents(dirname(__DIR__) . '/receipts', $payload['order'] . "\n", FILE_APPEND);
    }

    public function config(): array
    {
        return [];
    }
}
`)
	write("src/Price.php", `<?php
namespace Site;

final class Price implements \Queuety\Step
{
    public function handle(array $state): array
    {
        return ['total' => $state['qty'] * 3];
    }

    public function config(): array
    {
        return [];
    }
}
`)
	write("src/Invoice.php", `<?php
namespace Site;

final class Invoice implements \Queuety\Step
{
    public function handle(array $state): array
    {
        return ['invoice' => 'INV-' . $state['total']];
    }

    public function config(): array
    {
        return [];
    }
}
`)
	db := dbParts(t, dsn)
	write("dispatch.php", `<?php
require __DIR__ . '/vendor/autoload.php';

use Queuety\Connection;
use Queuety\Queuety;

Queuety::init(new Connection(`+phpString(db.Addr)+`, `+phpString(db.DBName)+`, `+phpString(db.User)+`, `+phpString(db.Passwd)+`, 'wp_'));
$job = Queuety::dispatch(Site\SendReceipt::class, ['order' => 7])->id();
$workflow = Queuety::workflow('checkout')->then(Site\Price::class)->then(Site\Invoice::class)->dispatch(['qty' => 4]);
echo json_encode(['job' => $job, 'workflow' => $workflow]);
`)
	// The pool's bootstrap: the application's autoloader finds its classes.
	write("bootstrap.php", "<?php\nrequire __DIR__ . '/vendor/autoload.php';\n")

	composer := []string{"COMPOSER_DISABLE_NETWORK=1", "COMPOSER_ALLOW_SUPERUSER=1",
		"COMPOSER_HOME=" + t.TempDir(), "COMPOSER_CACHE_DIR=" + t.TempDir()}
	// The package's own manifest, as Packagist would read it.
	require.Contains(t, runEnv(t, bridge, composer, "composer", "validate", "--strict", "--no-check-publish"), "is valid")
	out := runEnv(t, app, composer, "composer", "install", "--no-interaction", "--no-progress", "--no-dev")
	require.Contains(t, out, "Installing queuety-go/php-bridge")
	fi, err := os.Lstat(filepath.Join(app, "vendor/queuety-go/php-bridge"))
	require.NoError(t, err, out)
	require.True(t, fi.IsDir(), "copied, not a symlink to the checkout")
	_, err = os.Stat(filepath.Join(app, "vendor/bin/queuety-php-worker"))
	require.NoError(t, err, out)

	run(t, app, rel.binary, "migrate", "--dsn", dsn)
	var ids struct{ Job, Workflow int }
	require.NoError(t, json.Unmarshal([]byte(run(t, app, "php", "dispatch.php")), &ids))
	require.Positive(t, ids.Job)
	require.Positive(t, ids.Workflow)

	out = run(t, app, rel.binary, "flush", "--dsn", dsn,
		"--php", "php vendor/bin/queuety-php-worker --bootstrap bootstrap.php", "--php-workers", "1")

	receipts, err := os.ReadFile(filepath.Join(app, "receipts"))
	require.NoError(t, err, out)
	require.Equal(t, "7\n", string(receipts), "the job's handler ran once")
	require.Equal(t, []string{"completed", "completed", "completed"}, statuses(t, dsn, "wp_queuety_jobs"), out)
	conn, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	defer conn.Close()
	var wf struct {
		Status string `db:"status"`
		State  string `db:"state"`
	}
	require.NoError(t, conn.Get(&wf, "SELECT status, state FROM wp_queuety_workflows WHERE id = ?", ids.Workflow))
	require.Equal(t, "completed", wf.Status, out)
	var state map[string]any
	require.NoError(t, json.Unmarshal([]byte(wf.State), &state))
	require.EqualValues(t, 12, state["total"])
	require.Equal(t, "INV-12", state["invoice"])
}
