package chaos

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testbin"
)

// mariadbd is a private MariaDB server: its own datadir under the test's
// temporary directory, its own port and socket, started and SIGKILLed by
// the suite.
type mariadbd struct {
	dir, data, sock string
	port            int
	cmd             *exec.Cmd
	out             testbin.SyncBuffer
	exited          chan struct{}
}

const mariadbdPath = "/usr/sbin/mariadbd"

// newMariaDB initializes a datadir (root over TCP with an empty password)
// and starts the server on a free port.
func newMariaDB(t *testing.T) *mariadbd {
	t.Helper()
	if _, err := os.Stat(mariadbdPath); err != nil {
		t.Fatalf("the private-MariaDB round needs %s (scripts/ensure-mariadb.sh installs it): %v", mariadbdPath, err)
	}
	install, err := exec.LookPath("mariadb-install-db")
	require.NoError(t, err, "the private-MariaDB round needs mariadb-install-db (scripts/ensure-mariadb.sh installs it)")
	dir := t.TempDir()
	m := &mariadbd{dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "s")}
	out, err := exec.Command(install, "--no-defaults", "--datadir="+m.data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--user="+currentUser()).CombinedOutput()
	require.NoError(t, err, "mariadb-install-db:\n%s", out)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m.port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	m.start(t)
	t.Cleanup(func() {
		if m.alive() {
			_ = m.cmd.Process.Kill() // the server this suite started
			<-m.exited
		}
	})
	return m
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return fmt.Sprint(os.Geteuid())
}

// start starts the server (crash recovery included, after a kill) and
// waits until it accepts connections.
func (m *mariadbd) start(t *testing.T) {
	t.Helper()
	m.cmd = exec.Command(mariadbdPath, "--no-defaults", "--datadir="+m.data, "--socket="+m.sock,
		fmt.Sprintf("--port=%d", m.port), "--bind-address=127.0.0.1", "--user="+currentUser(),
		"--skip-log-bin", "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
		"--default-time-zone=+00:00", "--max-connections=500",
		"--pid-file="+filepath.Join(m.dir, "pid"), "--log-error="+filepath.Join(m.dir, "error.log"),
		// A tmpdir of its own: at start-up (and crash recovery) mariadbd
		// deletes every #sql* file in its tmpdir, and in the shared /tmp
		// those are the test server's live temporary tables ("Error on
		// delete of '/tmp/#sql-temptable-…MAI'" in other packages' tests).
		"--tmpdir="+m.dir)
	m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
	m.exited = make(chan struct{})
	require.NoError(t, m.cmd.Start())
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	db, err := sql.Open("mysql", m.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for db.Ping() != nil {
		if !m.alive() || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
			t.Fatalf("private mariadbd did not come up:\n%s%s", m.out.String(), tail(string(log)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *mariadbd) alive() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the server: every open transaction is rolled back at the
// next start, committed ones survive (innodb_flush_log_at_trx_commit=1).
func (m *mariadbd) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, m.cmd.Process.Kill())
	<-m.exited
}

func (m *mariadbd) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.port, db)
}

// createDB creates a database on the private server and returns its DSN.
func (m *mariadbd) createDB(t *testing.T, name string) string {
	t.Helper()
	db, err := sql.Open("mysql", m.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	return m.dsn(name)
}
