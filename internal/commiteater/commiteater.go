// Package commiteater is a test TCP proxy to a MySQL server that loses the
// answer to a COMMIT: once armed, it forwards the next COMMIT, reads the
// server's answer without passing it on, and closes the client's
// connection. The client sees a connection that died during COMMIT; the
// server applied it. Tests of the claim's read-back use it. It also keeps
// the statements each connection sent (Statements), for tests of what a
// connection ran in which order.
package commiteater

import (
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// Proxy is one proxy; DSN reaches the server through it.
type Proxy struct {
	DSN   string
	armed atomic.Bool
	after atomic.Pointer[string]
	ate   atomic.Int64

	mu    sync.Mutex
	conns [][]string // each connection's statements, in order
}

// New starts a proxy in front of dsn's server, closed when the test ends.
func New(t testing.TB, dsn string) *Proxy {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	target := cfg.Addr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	cfg.Addr = ln.Addr().String()
	p := &Proxy{DSN: cfg.FormatDSN()}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			go p.relay(client, server)
		}
	}()
	return p
}

// Arm makes the next COMMIT on any connection lose its answer (once).
func (p *Proxy) Arm() { p.ArmAfter("") }

// ArmAfter makes the next COMMIT that follows, on the same connection, a
// statement containing marker lose its answer (once): the COMMIT of one
// kind of transaction.
func (p *Proxy) ArmAfter(marker string) {
	p.after.Store(&marker)
	p.armed.Store(true)
}

// Eaten is how many COMMIT answers the proxy swallowed.
func (p *Proxy) Eaten() int64 { return p.ate.Load() }

// Statements are the statements (COM_QUERY texts: the driver interpolates
// arguments) each connection sent so far, a slice a connection, in order.
func (p *Proxy) Statements() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]string, len(p.conns))
	for i, c := range p.conns {
		out[i] = slices.Clone(c)
	}
	return out
}

// newConn makes room for a connection's statements and returns its index.
func (p *Proxy) newConn() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, nil)
	return len(p.conns) - 1
}

// record keeps a statement connection conn sent.
func (p *Proxy) record(conn int, q string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[conn] = append(p.conns[conn], q)
}

func (p *Proxy) relay(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	eating := make(chan struct{})
	answered := make(chan struct{})
	go func() { // server to client
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if err != nil {
				return
			}
			select {
			case <-eating:
				p.ate.Add(1)
				close(answered)
				return
			default:
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	marked := false // this connection sent the marker since its last COMMIT
	conn := p.newConn()
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		if n > 5 && buf[4] == 0x03 {
			p.record(conn, string(buf[5:n]))
		}
		// A COM_QUERY (0x03) packet "COMMIT": 4 header bytes, then the command.
		commit := n >= 11 && buf[4] == 0x03 && strings.EqualFold(string(buf[5:11]), "COMMIT")
		if m := p.after.Load(); !commit && m != nil && *m != "" && strings.Contains(string(buf[:n]), *m) {
			marked = true
		}
		want := false
		if m := p.after.Load(); commit && m != nil && (*m == "" || marked) {
			want = true
		}
		if commit {
			marked = false
		}
		if want && p.armed.CompareAndSwap(true, false) {
			close(eating)
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
			<-answered
			return
		}
		if _, err := server.Write(buf[:n]); err != nil {
			return
		}
	}
}
