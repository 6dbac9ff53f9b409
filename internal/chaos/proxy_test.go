package chaos

import (
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// cutProxy forwards TCP connections to a MySQL server and closes them on
// demand, both ways at once: to the client a server that vanished mid
// statement or mid transaction; to the server a client that did (it rolls
// the transaction back).
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[int]*proxied
	next   int
	cuts   int
}

type proxied struct{ client, server net.Conn }

func (p *proxied) close() { _ = p.client.Close(); _ = p.server.Close() }

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target, conns: map[int]*proxied{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.close()
		}
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &proxied{client, server}
		p.mu.Lock()
		id := p.next
		p.next++
		p.conns[id] = c
		p.mu.Unlock()
		var once sync.Once
		done := func() {
			once.Do(func() {
				c.close()
				p.mu.Lock()
				delete(p.conns, id)
				p.mu.Unlock()
			})
		}
		go func() { _, _ = io.Copy(server, client); done() }()
		go func() { _, _ = io.Copy(client, server); done() }()
	}
}

// cut closes k random live connections (all when k <= 0) and returns how
// many it closed.
func (p *cutProxy) cut(k int) int {
	p.mu.Lock()
	var victims []*proxied
	for _, c := range p.conns { // map order is random
		if k > 0 && len(victims) == k {
			break
		}
		victims = append(victims, c)
	}
	p.cuts += len(victims)
	p.mu.Unlock()
	for _, c := range victims {
		c.close()
	}
	return len(victims)
}

// Round c: three workers reach MariaDB through a proxy that, every 50-300
// ms, cuts one to three of their connections (one time in ten, all of
// them) while they drain 2,000 jobs: claims, completions, heartbeats and
// sweeps lose their connection mid-statement and mid-transaction. The
// handlers record their runs over a direct connection.
func TestChaosCutConnections(t *testing.T) {
	direct := testdb.New(t)
	db := prepare(t, direct)
	cfg, err := mysql.ParseDSN(direct)
	require.NoError(t, err)
	proxy := newCutProxy(t, cfg.Addr)
	cfg.Addr = proxy.addr()
	viaProxy := cfg.FormatDSN()

	const jobs = 2000
	var total tally
	n := rounds(t, 1)
	for round := 1; round <= n; round++ {
		reset(t, db)
		insertJobs(t, db, jobs)
		f := newFleet(t, direct)
		for i := range 3 {
			f.worker(fmt.Sprintf("cut-r%d-w%d", round, i), viaProxy)
		}
		// Cuts start once the workers drain: a `work` that cannot complete
		// its start-up checks exits (its supervisor restarts it).
		waitUntil(t, f, 120*time.Second, func() bool { return completed(t, db) >= 50 })
		stop := make(chan struct{})
		cutterDone := make(chan struct{})
		go func() {
			defer close(cutterDone)
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(50+mrand.IntN(250)) * time.Millisecond):
				}
				if mrand.IntN(10) == 0 {
					proxy.cut(0)
				} else {
					proxy.cut(1 + mrand.IntN(3))
				}
			}
		}()
		// Cut through most of the drain, then let the rest finish.
		waitUntil(t, f, 240*time.Second, func() bool { return completed(t, db) >= jobs*9/10 })
		close(stop)
		<-cutterDone
		ok := drain(t, db, f, jobs, 180*time.Second)
		f.stopAll(15 * time.Second)
		if !ok {
			t.Logf("round %d: drain timed out", round)
		}
		tl := count(t, db, f.killedNames())
		proxy.mu.Lock()
		cuts := proxy.cuts
		proxy.cuts = 0
		proxy.mu.Unlock()
		check(t, fmt.Sprintf("connection cut round %d (%d connections cut)", round, cuts), tl)
		total.add(tl)
	}
	t.Logf("connection cuts, %d rounds: %s", n, total)
}
