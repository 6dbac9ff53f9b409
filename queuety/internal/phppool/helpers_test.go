package phppool_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// requirePHP skips without php, except in CI, where it must be there.
func requirePHP(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("php")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("php is required in CI (scripts/ensure-php.sh installs it)")
		}
		t.Skip("php not installed; scripts/ensure-php.sh installs it")
	}
	return bin
}

// workerCommand is the pool command serving testdata/app.php.
func workerCommand(t testing.TB) []string {
	t.Helper()
	php := requirePHP(t)
	script, err := filepath.Abs("../../../php-bridge/bin/queuety-php-worker")
	require.NoError(t, err)
	app, err := filepath.Abs("testdata/app.php")
	require.NoError(t, err)
	return []string{php, script, "--bootstrap", app}
}

// startPool starts a pool over the test app and stops it at cleanup.
func startPool(t *testing.T, cfg phppool.Config, log *slog.Logger) *phppool.Pool {
	t.Helper()
	if cfg.Command == nil {
		cfg.Command = workerCommand(t)
	}
	if log == nil {
		log = testLogger()
	}
	p, err := phppool.New(cfg, log)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Stop(ctx))
	})
	return p
}

// job builds a job as the worker would hand it over.
func job(t testing.TB, id int64, handler, payload string) *queuety.Job {
	t.Helper()
	if payload == "" {
		payload = "[]"
	}
	v, err := phpjson.DecodeString(payload)
	require.NoError(t, err)
	return &queuety.Job{ID: id, Queue: "default", Handler: handler, Attempt: 1, MaxAttempts: 3, Payload: v, RawPayload: []byte(payload)}
}

func handle(t *testing.T, p *phppool.Pool, id int64, handler, payload string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return p.Handle(ctx, job(t, id, handler, payload))
}

func testLogger() *slog.Logger {
	if os.Getenv("QUEUETY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// capture is a slog handler that keeps every record, to check what the
// pool logged.
type capture struct {
	mu      sync.Mutex
	records []string
	attrs   []slog.Attr
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range c.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	c.mu.Lock()
	c.records = append(c.records, b.String())
	c.mu.Unlock()
	return nil
}

func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureChild{root: c, attrs: as}
}

func (c *capture) WithGroup(string) slog.Handler { return c }

// captureChild carries With() attributes into the shared record list.
type captureChild struct {
	root  *capture
	attrs []slog.Attr
}

func (c *captureChild) Enabled(context.Context, slog.Level) bool { return true }

func (c *captureChild) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(c.attrs...)
	return c.root.Handle(ctx, r)
}

func (c *captureChild) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureChild{root: c.root, attrs: append(append([]slog.Attr{}, c.attrs...), as...)}
}

func (c *captureChild) WithGroup(string) slog.Handler { return c }

func (c *capture) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.records...)
}

// waitFor polls cond until it holds or the timeout fails the test.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func slogNew(h slog.Handler) *slog.Logger { return slog.New(h) }

func itoa(n int) string { return strconv.Itoa(n) }

// dbAppPool starts a one-process pool over a test bootstrap whose PHP
// facade connects to c's database (the QUEUETY_TEST_DB_* variables the
// bootstrap reads), so PHP code in the job writes the rows the plugin
// would.
func dbAppPool(t *testing.T, c *queuety.Client, bootstrap string) *phppool.Pool {
	t.Helper()
	dsn, err := mysql.ParseDSN(c.Config().DSN)
	require.NoError(t, err)
	php := requirePHP(t)
	script, err := filepath.Abs("../../../php-bridge/bin/queuety-php-worker")
	require.NoError(t, err)
	app, err := filepath.Abs(bootstrap)
	require.NoError(t, err)
	return startPool(t, phppool.Config{Workers: 1, Command: []string{"env",
		"QUEUETY_TEST_DB_ADDR=" + dsn.Addr, "QUEUETY_TEST_DB_NAME=" + dsn.DBName,
		"QUEUETY_TEST_DB_USER=" + dsn.User, "QUEUETY_TEST_DB_PASSWORD=" + dsn.Passwd,
		php, script, "--bootstrap", app}}, nil)
}
