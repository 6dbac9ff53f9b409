package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Login throttling (N17): after freeFailures wrong tokens in a row from
// one client address, each further attempt must wait, the wait doubling
// per failure from firstWait up to maxWait. A right token clears the
// address's count. Behind a reverse proxy every client shares the
// proxy's address: the throttle then slows everyone, which is the safe
// side for a single operator token.
const (
	freeFailures = 3
	firstWait    = time.Second
	maxWait      = 5 * time.Minute
	// throttleClients bounds the table: past it, the entries whose wait
	// is over are dropped first, then the oldest.
	throttleClients = 10000
)

type failState struct {
	n     int
	until time.Time
}

// loginThrottle counts wrong tokens per client address.
type loginThrottle struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[string]*failState
}

func newLoginThrottle(now func() time.Time) *loginThrottle {
	return &loginThrottle{now: now, clients: map[string]*failState{}}
}

// wait is how long client must still wait before its next attempt.
func (l *loginThrottle) wait(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.clients[client]; ok {
		if d := f.until.Sub(l.now()); d > 0 {
			return d
		}
	}
	return 0
}

// fail counts a wrong token and returns the wait before the next try.
func (l *loginThrottle) fail(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.clients[client]
	if !ok {
		if len(l.clients) >= throttleClients {
			l.prune(now)
		}
		f = &failState{}
		l.clients[client] = f
	}
	f.n++
	if f.n <= freeFailures {
		return 0
	}
	d := firstWait << min(f.n-freeFailures-1, 20)
	d = min(d, maxWait)
	f.until = now.Add(d)
	return d
}

// succeed clears client's count.
func (l *loginThrottle) succeed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
}

// prune drops the entries whose wait is over, or every entry if none is
// (a flood of addresses must not grow the table without bound).
func (l *loginThrottle) prune(now time.Time) {
	for k, f := range l.clients {
		if !now.Before(f.until) {
			delete(l.clients, k)
		}
	}
	if len(l.clients) >= throttleClients {
		clear(l.clients)
	}
}

// clientOf is the request's client address (its host, without the port).
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
