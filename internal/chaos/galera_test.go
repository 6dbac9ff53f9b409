//go:build galera

package chaos

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testbin"
)

// galeraProvider is Debian's galera-4.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// galera is a private three-node MariaDB Galera cluster on loopback: each
// node on an address of its own (127.0.0.2, .3, .4, so a node can be cut
// off from the others by address, see partition), with its own datadir,
// client port, group communication (gcomm) port, IST and SST ports. State
// transfer is rsync. The suite bootstraps node 0, then joins 1 and 2.
type galera struct {
	t     *testing.T
	dir   string
	nodes []*galeraNode
	proxy *haproxy
}

type galeraNode struct {
	c                         *galera
	i                         int
	name, ip, dir, data, user string
	port, gcomm, ist, sstPrt  int
	cmd                       *exec.Cmd
	out                       testbin.SyncBuffer
	exited                    chan struct{}
}

// freePort is a port free on ip now.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// newGalera initializes one datadir, copies it for each node, and starts
// the cluster (a node at a time: each joiner takes a state transfer).
func newGalera(t *testing.T) *galera {
	t.Helper()
	for _, p := range []string{mariadbdPath, galeraProvider} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the Galera rounds need %s (apt-get install mariadb-server galera-4 rsync haproxy): %v", p, err)
		}
	}
	for _, b := range []string{"mariadb-install-db", "rsync", "haproxy"} {
		_, err := exec.LookPath(b)
		require.NoError(t, err, "the Galera rounds need %s (apt-get install mariadb-server galera-4 rsync haproxy)", b)
	}
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed")
	user := galeraUser(t, dir)
	out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+seed, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--user="+user).CombinedOutput()
	require.NoError(t, err, "mariadb-install-db:\n%s", out)
	c := &galera{t: t, dir: dir}
	for i := range 3 {
		ip := fmt.Sprintf("127.0.0.%d", i+2)
		n := &galeraNode{c: c, i: i, user: user, name: fmt.Sprintf("node%d", i), ip: ip, dir: filepath.Join(dir, fmt.Sprint("n", i))}
		n.data = filepath.Join(n.dir, "data")
		require.NoError(t, os.MkdirAll(n.dir, 0o755))
		out, err := exec.Command("cp", "-a", seed, n.data).CombinedOutput()
		require.NoError(t, err, "copy datadir: %s", out)
		if user != currentUser() {
			out, err := exec.Command("chown", "-R", user+":", n.dir).CombinedOutput()
			require.NoError(t, err, "chown: %s", out)
		}
		n.port, n.gcomm, n.ist, n.sstPrt = freePort(t, ip), freePort(t, ip), freePort(t, ip), freePort(t, ip)
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.cmd != nil && n.alive() {
				_ = n.cmd.Process.Kill() // a node this suite started
				<-n.exited
			}
		}
	})
	for _, n := range c.nodes {
		n.start(t, n.i == 0)
	}
	return c
}

// galeraUser is the user the nodes run as. Run as root, a node's rsync
// state transfer receives as nobody, who cannot write a root-owned
// datadir; so as root the nodes run as mysql (the package's user), in
// directories it can reach.
func galeraUser(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return currentUser()
	}
	_, err := exec.Command("id", "mysql").CombinedOutput()
	require.NoError(t, err, "run as root, the Galera rounds need the mysql user (the mariadb-server package makes it)")
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	return "mysql"
}

func (c *galera) address() string {
	var peers []string
	for _, n := range c.nodes {
		peers = append(peers, fmt.Sprintf("%s:%d", n.ip, n.gcomm))
	}
	return "gcomm://" + strings.Join(peers, ",")
}

// start starts the node (bootstrapping a new cluster when bootstrap) and
// waits until it is synced with the cluster and accepts statements.
func (n *galeraNode) start(t *testing.T, bootstrap bool) {
	t.Helper()
	// A node killed mid-write restarts from a full state transfer: its
	// grastate.dat says seqno -1, and recovering the position
	// (galera_recovery) is more machinery than a test needs.
	_ = os.Remove(filepath.Join(n.data, "grastate.dat"))
	args := []string{"--no-defaults", "--datadir=" + n.data, "--socket=" + filepath.Join(n.dir, "s"),
		fmt.Sprintf("--port=%d", n.port), "--bind-address=" + n.ip, "--user=" + n.user,
		"--skip-log-bin", "--skip-name-resolve", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
		"--default-time-zone=+00:00", "--max-connections=300", "--performance-schema=OFF",
		"--pid-file=" + filepath.Join(n.dir, "pid"), "--log-error=" + filepath.Join(n.dir, "error.log"),
		"--tmpdir=" + n.dir,
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--default-storage-engine=InnoDB",
		"--wsrep-on=ON", "--wsrep-provider=" + galeraProvider,
		"--wsrep-cluster-name=queuety-chaos", "--wsrep-cluster-address=" + n.c.address(),
		"--wsrep-node-name=" + n.name, "--wsrep-node-address=" + fmt.Sprintf("%s:%d", n.ip, n.gcomm),
		"--wsrep-provider-options=" + fmt.Sprintf("gmcast.listen_addr=tcp://%s:%d;ist.recv_addr=%s:%d;gcache.size=64M", n.ip, n.gcomm, n.ip, n.ist),
		"--wsrep-sst-method=rsync", fmt.Sprintf("--wsrep-sst-receive-address=%s:%d", n.ip, n.sstPrt),
		"--wsrep-slave-threads=2",
	}
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	// A joiner's rsync receiver now and then fails to come up on this
	// loaded machine ("Failed to read 'ready <addr>'"), and the node exits;
	// a new try, with a new receiver port, goes through.
	for try := 1; ; try++ {
		n.cmd = exec.Command(mariadbdPath, args...)
		n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
		n.exited = make(chan struct{})
		require.NoError(t, n.cmd.Start())
		go func() { _ = n.cmd.Wait(); close(n.exited) }()
		if try == 3 || n.synced(180*time.Second) {
			break
		}
		if n.alive() {
			n.kill(t)
		}
		n.sstPrt = freePort(t, n.ip)
		for i, a := range args {
			if strings.HasPrefix(a, "--wsrep-sst-receive-address=") {
				args[i] = fmt.Sprintf("--wsrep-sst-receive-address=%s:%d", n.ip, n.sstPrt)
			}
		}
		_ = os.Remove(filepath.Join(n.data, "grastate.dat"))
	}
	n.waitSynced(t, 180*time.Second)
}

// synced waits up to d for the node to be synced; false when it exited or
// the time ran out.
func (n *galeraNode) synced(d time.Duration) bool {
	db, err := sql.Open("mysql", n.dsn(""))
	if err != nil {
		return false
	}
	defer db.Close()
	deadline := time.Now().Add(d)
	for n.alive() && time.Now().Before(deadline) {
		var name, state, ready string
		err := db.QueryRow("SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state)
		if err == nil {
			err = db.QueryRow("SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &ready)
		}
		if err == nil && state == "Synced" && ready == "ON" {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// waitSynced waits until the node is a synced member of a primary
// component.
func (n *galeraNode) waitSynced(t *testing.T, d time.Duration) {
	t.Helper()
	db, err := sql.Open("mysql", n.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(d)
	for {
		var name, state string
		err := db.QueryRow("SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state)
		var ready string
		if err == nil {
			err = db.QueryRow("SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &ready)
		}
		if err == nil && state == "Synced" && ready == "ON" {
			return
		}
		if !n.alive() || time.Now().After(deadline) {
			var logs strings.Builder
			for _, o := range n.c.nodes {
				log, _ := os.ReadFile(filepath.Join(o.dir, "error.log"))
				fmt.Fprintf(&logs, "--- %s error.log:\n%s\n", o.name, tail(string(log)))
			}
			t.Fatalf("galera %s did not become synced (state %q, err %v):\n%s", n.name, state, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (n *galeraNode) alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the node.
func (n *galeraNode) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, n.cmd.Process.Kill())
	<-n.exited
}

func (n *galeraNode) dsn(db string) string {
	return fmt.Sprintf("root@tcp(%s:%d)/%s", n.ip, n.port, db)
}

// createDB creates a database on the cluster (through node 0, which
// replicates it) and returns each node's DSN to it.
func (c *galera) createDB(t *testing.T, name string) []string {
	t.Helper()
	db, err := sql.Open("mysql", c.nodes[0].dsn(""))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE IF NOT EXISTS `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	var dsns []string
	for _, n := range c.nodes {
		dsns = append(dsns, n.dsn(name))
	}
	return dsns
}

// haproxy is one writer behind a proxy, the usual Galera deployment: every
// client connection goes to one node at a time (stick on dst), another
// takes over when it fails its check, and the proxy does not go back when
// the old one returns (which would make two writers).
type haproxy struct {
	port   int
	cmd    *exec.Cmd
	out    testbin.SyncBuffer
	exited chan struct{}
}

func (c *galera) startProxy(t *testing.T) *haproxy {
	t.Helper()
	h := &haproxy{port: freePort(t, "127.0.0.1")}
	var servers strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&servers, "    server %s %s:%d check inter 300 fall 2 rise 3 on-marked-down shutdown-sessions\n", n.name, n.ip, n.port)
	}
	cfg := fmt.Sprintf(`global
    maxconn 2000
defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    retries 3
    option redispatch
frontend mysql
    bind 127.0.0.1:%d
    default_backend galera
backend galera
    balance first
    stick-table type integer size 1 expire 24h
    stick on int(1)
%s`, h.port, servers.String())
	path := filepath.Join(c.dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	h.cmd = exec.Command("haproxy", "-db", "-f", path)
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	h.exited = make(chan struct{})
	require.NoError(t, h.cmd.Start())
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		select {
		case <-h.exited:
		default:
			_ = h.cmd.Process.Kill() // the proxy this suite started
			<-h.exited
		}
	})
	db, err := sql.Open("mysql", h.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for db.Ping() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not come up:\n%s", h.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.proxy = h
	return h
}

func (h *haproxy) dsn(db string) string { return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", h.port, db) }

// writer is the node the proxy sends connections to now.
func (c *galera) writer(t *testing.T) *galeraNode {
	t.Helper()
	db, err := sql.Open("mysql", c.proxy.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	var name string
	require.NoError(t, db.QueryRow("SELECT @@wsrep_node_name").Scan(&name))
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("the proxy's writer %q is not a node of the cluster", name)
	return nil
}

// A smoke test of the harness: three synced nodes, a write on one read on
// the others.
func TestChaosGaleraUp(t *testing.T) {
	c := newGalera(t)
	dsns := c.createDB(t, "smoke")
	db0 := openDB(t, dsns[0])
	_, err := db0.Exec("CREATE TABLE t (id INT PRIMARY KEY)")
	require.NoError(t, err)
	_, err = db0.Exec("INSERT INTO t VALUES (1)")
	require.NoError(t, err)
	for _, d := range dsns[1:] {
		var n int
		require.NoError(t, openDB(t, d).QueryRow("SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM t").Scan(&n))
		require.Equal(t, 1, n)
	}
	h := c.startProxy(t)
	_ = h
	require.Equal(t, "node0", c.writer(t).name)
}

// partition cuts node n off from the other nodes: iptables drops every
// packet between its address and theirs (the nodes' group communication
// binds to their own address, so this is exactly the cluster's traffic;
// clients reach every node from 127.0.0.1 and are not cut). The rules live
// in a chain of their own; heal removes them.
func (c *galera) partition(t *testing.T, n *galeraNode) (heal func()) {
	t.Helper()
	if _, err := exec.LookPath("iptables"); err != nil || os.Geteuid() != 0 {
		t.Fatalf("the partition round needs iptables and root (it is %v, euid %d)", err, os.Geteuid())
	}
	chain := fmt.Sprintf("QGO_CHAOS_%d", os.Getpid())
	ipt := func(args ...string) error {
		out, err := exec.Command("iptables", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	require.NoError(t, ipt("-N", chain))
	healed := false
	heal = func() {
		if healed {
			return
		}
		healed = true
		_ = ipt("-D", "INPUT", "-j", chain)
		_ = ipt("-F", chain)
		_ = ipt("-X", chain)
	}
	t.Cleanup(heal)
	for _, o := range c.nodes {
		if o == n {
			continue
		}
		require.NoError(t, ipt("-A", chain, "-s", n.ip, "-d", o.ip, "-j", "DROP"))
		require.NoError(t, ipt("-A", chain, "-s", o.ip, "-d", n.ip, "-j", "DROP"))
	}
	require.NoError(t, ipt("-I", "INPUT", "-j", chain))
	return heal
}

// clusterSize is wsrep_cluster_size as node n sees it, or 0 when it does
// not answer.
func (n *galeraNode) clusterSize() int {
	db, err := sql.Open("mysql", n.dsn("")+"?timeout=2s&readTimeout=2s")
	if err != nil {
		return 0
	}
	defer db.Close()
	var name string
	var size int
	if db.QueryRow("SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size) != nil {
		return 0
	}
	return size
}
