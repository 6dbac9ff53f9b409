package queuety

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// php runs testdata/interop.php against the client's database.
func php(t *testing.T, c *Client, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("php")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("php is required in CI (scripts/ensure-php.sh installs it)")
		}
		t.Skip("php not installed; scripts/ensure-php.sh installs it")
	}
	cfg, err := mysql.ParseDSN(c.cfg.DSN)
	require.NoError(t, err)
	host, port, _ := strings.Cut(cfg.Addr, ":")
	full := append([]string{"testdata/interop.php", args[0], host, port, cfg.DBName, c.store.Tables()["jobs"]}, args[1:]...)
	out, err := exec.Command(bin, full...).CombinedOutput()
	require.NoError(t, err, "php: %s", out)
	return strings.TrimSpace(string(out))
}

// TestPHPAndGoShareRows: PHP dispatches as the plugin does, Go runs it; Go
// dispatches, Go runs; then PHP itself checks every row's bytes and hash.
func TestPHPAndGoShareRows(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	phpID, err := strconv.ParseInt(php(t, c, "dispatch"), 10, 64)
	require.NoError(t, err)

	var mu sync.Mutex
	seen := map[string]string{}
	reg := NewRegistry()
	record := func(ctx context.Context, j *Job) error {
		b, err := phpjson.Encode(j.Payload)
		if err != nil {
			return err
		}
		mu.Lock()
		seen[j.Handler] = string(b)
		mu.Unlock()
		return nil
	}
	reg.HandleFunc("php_dispatched", record)
	reg.HandleFunc("go_dispatched", record)
	goJob, err := c.Dispatch(ctx, "go_dispatched", map[string]any{"to": "zoë@example.com", "url": "https://x/y", "n": 1.0}, Unique())
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "both completed", func() bool { return countStatus(t, c, store.StatusCompleted) == 2 })

	require.Equal(t, `{"to":"zo\u00eb@example.com","url":"https:\/\/x\/y","n":1,"tags":[],"big":9007199254740993}`, seen["php_dispatched"],
		"Go read PHP's payload unchanged")
	require.Equal(t, "ok", php(t, c, "verify", strconv.FormatInt(phpID, 10), strconv.FormatInt(goJob.ID, 10)))
}
