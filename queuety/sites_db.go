package queuety

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	store "github.com/queuety-go/queuety/sql"
)

// serverPool is the connection pool of one database server, as one user
// (store.ServerOf: the DSN less its database), shared by the sites of every
// database on it. Its connections are in no database: each site's Store
// names its tables with its own (store.NewIn), so a statement that forgot
// to would fail loudly instead of reading another site's tables.
type serverPool struct {
	server string
	db     *sqlx.DB
	info   store.ServerInfo
	conns  int
	refs   int
	// databases counts the sites served in each database: a database is
	// inspected when its first site starts (it exists, the user may use
	// it), as its own pool's open once did.
	databases map[string]int
	// sweeps is the retention sweep turn of the pool's sites
	// (Client.Sweep): one at a time, so a sweep's deletes always find a
	// connection besides the one holding its lock.
	sweeps chan struct{}
}

// sharedDB is one site's share of its server's pool: the pool, and the
// database its tables are in.
type sharedDB struct {
	*serverPool
	database string
}

// acquireDB returns cfg's database's share of its server's pool, opening
// the pool (and the server's look) on first use.
func (s *Sites) acquireDB(ctx context.Context, cfg Config) (*sharedDB, error) {
	server, database, err := store.ServerOf(cfg.DSN)
	if err != nil {
		return nil, &ConfigError{err}
	}
	// Opens are serialized apart from s.mu, so a server that does not
	// answer holds up other opens, never the looks or Status.
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	p := s.pools[server]
	if p != nil && p.databases[database] > 0 {
		p.refs++
		p.databases[database]++
		s.mu.Unlock()
		return &sharedDB{serverPool: p, database: database}, nil
	}
	spent := p == nil && s.conns+s.cfg.ConnsPerServer > s.cfg.MaxConns
	s.mu.Unlock()
	if spent {
		return nil, fmt.Errorf("connection budget spent: %d connections for each database server, at most %d in all (raise MaxConns, --max-conns)", s.cfg.ConnsPerServer, s.cfg.MaxConns)
	}
	// On the site's own DSN: a database that does not exist or that the
	// user may not use is named here, not found missing table by table.
	info, err := store.InspectServer(ctx, cfg.DSN, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if err := info.CheckServer(cfg.AllowNonUTC); err != nil {
		return nil, err
	}
	if p == nil {
		if p, err = s.openServer(ctx, server, info, cfg); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.refs++
	p.databases[database]++
	return &sharedDB{serverPool: p, database: database}, nil
}

// openServer opens the pool of server and its look, and registers both.
// The caller holds openMu.
func (s *Sites) openServer(ctx context.Context, server string, info store.ServerInfo, cfg Config) (*serverPool, error) {
	db, err := s.open(ctx, server, s.cfg.ConnsPerServer, cfg.Logger)
	if err != nil {
		return nil, err
	}
	// The look's own connections, beside the pool: one for the look, one
	// for the slower batched reads (readLoop), so a read never delays a
	// look. Every table they read is named with its database.
	lookDB, err := s.open(ctx, server, 2, cfg.Logger)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	look := &serverLook{dsn: server, db: lookDB, looker: store.NewDueLooker(lookDB), stop: stop}
	look.gate = newLookGate(func(ctx context.Context) (store.WriteCounters, error) { return s.readCounters(ctx, lookDB) },
		&look.own, s.cfg.LookInterval, s.cfg.IdleLookInterval, s.log.With("server", store.ServerName(server)), &s.looks)
	s.wg.Add(2)
	go s.lookLoop(lctx, look)
	go s.readLoop(lctx, look)
	p := &serverPool{server: server, db: db, info: info, conns: s.cfg.ConnsPerServer,
		databases: map[string]int{}, sweeps: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pools[server] = p
	s.servers[server] = look
	s.conns += p.conns
	return p, nil
}

// releaseDB gives back a site's share; the last site of a server closes
// its pool and stops its look.
func (s *Sites) releaseDB(d *sharedDB) {
	s.openMu.Lock() // an open under way may count on this server's pool
	defer s.openMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := d.serverPool
	p.refs--
	if p.databases[d.database]--; p.databases[d.database] <= 0 {
		delete(p.databases, d.database)
	}
	if p.refs > 0 {
		return
	}
	_ = p.db.Close()
	delete(s.pools, p.server)
	s.conns -= p.conns
	if l, ok := s.servers[p.server]; ok {
		l.stop()
		delete(s.servers, p.server)
	}
}
