package queuety

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	store "github.com/queuety-go/queuety/sql"
)

// sharedDB is the connection pool of one database, shared by its sites.
type sharedDB struct {
	dsn      string
	server   string
	database string
	db       *sqlx.DB
	info     store.ServerInfo
	conns    int
	refs     int
	// sweeps is the retention sweep turn of the pool's sites
	// (Client.Sweep): one at a time, so a sweep's deletes always find a
	// connection besides the one holding its lock.
	sweeps chan struct{}
}

// acquireDB returns the shared pool of cfg's database, opening it (and its
// server's look) on first use.
func (s *Sites) acquireDB(ctx context.Context, cfg Config) (*sharedDB, error) {
	// Opens are serialized apart from s.mu, so a server that does not
	// answer holds up other opens, never the looks or Status.
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	if d, ok := s.dbs[cfg.DSN]; ok {
		d.refs++
		s.mu.Unlock()
		return d, nil
	}
	spent := s.conns+s.cfg.ConnsPerDatabase > s.cfg.MaxConns
	open := s.servers[serverKey(cfg.DSN)]
	s.mu.Unlock()
	if spent {
		return nil, fmt.Errorf("connection budget spent: %d connections for each database, at most %d in all (raise MaxConns, --max-conns)", s.cfg.ConnsPerDatabase, s.cfg.MaxConns)
	}
	server, database, err := store.ServerOf(cfg.DSN)
	if err != nil {
		return nil, &ConfigError{err}
	}
	info, err := store.InspectServer(ctx, cfg.DSN, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if err := info.CheckServer(cfg.AllowNonUTC); err != nil {
		return nil, err
	}
	db, err := s.open(ctx, cfg.DSN, s.cfg.ConnsPerDatabase, cfg.Logger)
	if err != nil {
		return nil, err
	}
	var look *serverLook
	if open == nil {
		// The look's own connection, to whichever database it was opened
		// on: every table it reads is named with its database.
		// Two: one for the look, one for the slower batched reads
		// (readLoop), so a read never delays a look.
		lookDB, err := s.open(ctx, cfg.DSN, 2, cfg.Logger)
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		look = &serverLook{dsn: server, db: lookDB, looker: store.NewDueLooker(lookDB), stop: stop}
		s.wg.Add(2)
		go s.lookLoop(lctx, look)
		go s.readLoop(lctx, look)
	}
	d := &sharedDB{dsn: cfg.DSN, server: server, database: database, db: db, info: info, conns: s.cfg.ConnsPerDatabase, refs: 1,
		sweeps: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dbs[cfg.DSN] = d
	s.conns += d.conns
	if look != nil {
		s.servers[server] = look
	}
	return d, nil
}

// serverKey is the key of a DSN's server in Sites.servers ("" for a DSN
// that does not parse; ServerOf reports it).
func serverKey(dsn string) string {
	server, _, _ := store.ServerOf(dsn)
	return server
}

func (s *Sites) releaseDB(d *sharedDB) {
	s.openMu.Lock() // an open under way may count on this server's look
	defer s.openMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	d.refs--
	if d.refs > 0 {
		return
	}
	_ = d.db.Close()
	delete(s.dbs, d.dsn)
	s.conns -= d.conns
	for _, o := range s.dbs {
		if o.server == d.server {
			return
		}
	}
	if l, ok := s.servers[d.server]; ok {
		l.stop()
		delete(s.servers, d.server)
	}
}
