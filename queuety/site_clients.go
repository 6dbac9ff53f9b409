package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// SiteClientsConfig configures a SiteClients.
type SiteClientsConfig struct {
	// ConnsPerServer is the connections the sites of one database server
	// share, whatever their database (default 2: a reader of many sites
	// sends a statement at a time per page); a connection idle for a
	// minute is closed.
	ConnsPerServer int
	// MaxConns caps them over every server (default
	// DefaultSitesMaxConns): a server past it is not opened.
	MaxConns int
	// Retry is how long a database that could not be opened is not tried
	// again (default DefaultSitesRetry): its sites answer the same error
	// at once meanwhile, so a page reading every site does not wait for
	// a dead server on every load.
	Retry  time.Duration
	Logger *slog.Logger
}

// SiteClients opens the Clients of many sites on demand without serving
// them (no worker): what reads and acts on many sites from one process, as
// the dashboard of `serve --network` does. As under Sites, the sites of one
// database server share one connection pool, each site's statements naming
// its own database, and a Client's Close leaves it open; Close closes them
// all.
type SiteClients struct {
	cfg SiteClientsConfig

	mu      sync.Mutex
	dbs     map[string]*opening    // each database's inspection, by DSN
	pools   map[string]*opening    // each server's pool, by store.ServerOf
	clients map[string]*openClient // by site name
	conns   int                    // connections promised to open pools
}

// opening is what is opened once and, when it fails, not tried again
// before retryAt: a database's inspection (it exists, the user may use it,
// its server is one Queuety runs on) or a server's pool.
type opening struct {
	mu      sync.Mutex // held while opening
	done    bool
	db      *sqlx.DB // a server's pool
	info    store.ServerInfo
	err     error // the last open's failure
	retryAt time.Time
	// closed: Keep dropped the pool. A Client that found it listed just
	// before takes the server's listed pool instead: opening this one
	// would leave a pool no Keep or Close ever closes.
	closed bool
}

// errPoolClosed is open's answer for a pool Keep closed meanwhile.
var errPoolClosed = errors.New("the server's pool was closed")

// openClient is a site's Client and what it was opened for: a site whose
// database or tables change on a re-read gets a new one.
type openClient struct {
	dsn, jobs string
	client    *Client
}

// NewSiteClients fills in cfg's defaults.
func NewSiteClients(cfg SiteClientsConfig) *SiteClients {
	if cfg.ConnsPerServer <= 0 {
		cfg.ConnsPerServer = 2
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultSitesMaxConns
	}
	defDur(&cfg.Retry, DefaultSitesRetry)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &SiteClients{cfg: cfg, dbs: map[string]*opening{}, pools: map[string]*opening{}, clients: map[string]*openClient{}}
}

// Client returns site's Client, opening its server's pool on first use.
// An error names why the database cannot be read (it does not answer, the
// server is not one Queuety runs on, the connection budget is spent), or
// is the site's Err: a listing whose settings are refused may name other
// tables than the site's.
func (s *SiteClients) Client(ctx context.Context, site Site) (*Client, error) {
	if site.Err != nil {
		return nil, site.Err
	}
	cfg := site.Config
	if err := cfg.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	if err := store.CheckDSN(cfg.DSN); err != nil {
		return nil, &ConfigError{err}
	}
	tables, err := cfg.naming().Resolve()
	if err != nil {
		return nil, &ConfigError{err}
	}
	server, database, err := store.ServerOf(cfg.DSN)
	if err != nil {
		return nil, &ConfigError{err}
	}
	// Again while a concurrent Keep closes the pool found: each time with
	// the pool listed now.
	for {
		s.mu.Lock()
		if c, ok := s.clients[site.Name]; ok && c.dsn == cfg.DSN && c.jobs == tables["jobs"] {
			s.mu.Unlock()
			return c.client, nil
		}
		d, p := openingOf(s.dbs, cfg.DSN), openingOf(s.pools, server)
		s.mu.Unlock()
		// On the site's own DSN: a database that does not exist or that the
		// user may not use is named, not found missing table by table.
		err = s.open(d, func() error {
			info, err := store.InspectServer(ctx, cfg.DSN, s.cfg.Logger)
			if err == nil {
				err = info.CheckServer(cfg.AllowNonUTC)
			}
			d.info = info
			return err
		})
		if err != nil {
			return nil, err
		}
		err = s.open(p, func() error {
			db, err := s.connect(ctx, server)
			p.db = db
			return err
		})
		if errors.Is(err, errPoolClosed) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		db := p.db
		p.mu.Unlock()
		if db == nil { // closed by a Keep since
			continue
		}
		client, err := sharedClient(cfg, tables, db, database, d.info)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.pools[server] != p {
			// Keep dropped the pool since: the Client would not work.
			s.mu.Unlock()
			continue
		}
		s.clients[site.Name] = &openClient{dsn: cfg.DSN, jobs: tables["jobs"], client: client}
		s.mu.Unlock()
		return client, nil
	}
}

// openingOf is m's entry for key, made on first use. The caller holds s.mu.
func openingOf(m map[string]*opening, key string) *opening {
	o, ok := m[key]
	if !ok {
		o = &opening{}
		m[key] = o
	}
	return o
}

// open runs o's open unless it is done or failed within Retry.
func (s *SiteClients) open(o *opening, open func() error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return errPoolClosed
	}
	if o.done {
		return nil
	}
	if o.err != nil && time.Now().Before(o.retryAt) {
		return o.err
	}
	if err := open(); err != nil {
		o.err, o.retryAt = err, time.Now().Add(s.cfg.Retry)
		return err
	}
	o.done, o.err = true, nil
	return nil
}

// connect opens a pool of server's, in no database (each Store names its
// own), within the budget.
func (s *SiteClients) connect(ctx context.Context, server string) (*sqlx.DB, error) {
	s.mu.Lock()
	spent := s.conns+s.cfg.ConnsPerServer > s.cfg.MaxConns
	if !spent {
		s.conns += s.cfg.ConnsPerServer
	}
	s.mu.Unlock()
	if spent {
		return nil, fmt.Errorf("connection budget spent: %d connections for each database server, at most %d in all", s.cfg.ConnsPerServer, s.cfg.MaxConns)
	}
	db, err := store.Open(ctx, server, s.cfg.ConnsPerServer, s.cfg.Logger)
	if err != nil {
		s.mu.Lock()
		s.conns -= s.cfg.ConnsPerServer
		s.mu.Unlock()
		return nil, err
	}
	// A reader visits most sites now and then (an overview of every
	// site): their connections go back once it moves on.
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// Keep forgets the Clients of the sites not in keep (sites gone at a
// re-read) and closes the pools no kept site uses.
func (s *SiteClients) Keep(keep []Site) {
	kept := map[string]bool{}
	used := map[string]bool{}
	for _, site := range keep {
		kept[site.Name] = true
		used[site.Config.DSN] = true
		used[serverKey(site.Config.DSN)] = true
	}
	s.mu.Lock()
	for name := range s.clients {
		if !kept[name] {
			delete(s.clients, name)
		}
	}
	for dsn := range s.dbs {
		if !used[dsn] {
			delete(s.dbs, dsn)
		}
	}
	var gone []*opening
	for server, p := range s.pools {
		if !used[server] {
			gone = append(gone, p)
			delete(s.pools, server)
		}
	}
	s.mu.Unlock()
	s.closePools(gone)
}

// serverKey is the key of a DSN's server ("" for a DSN that does not
// parse; ServerOf reports it).
func serverKey(dsn string) string {
	server, _, _ := store.ServerOf(dsn)
	return server
}

// Close closes every pool; the Clients handed out stop working.
func (s *SiteClients) Close() error {
	s.Keep(nil)
	return nil
}

// closePools closes pools no longer listed. Each one's lock is taken before
// s.mu, as open does: an open under way finishes, then its pool is closed.
func (s *SiteClients) closePools(gone []*opening) {
	for _, p := range gone {
		p.mu.Lock()
		p.closed = true
		if p.db != nil {
			_ = p.db.Close()
			p.db = nil
			s.mu.Lock()
			s.conns -= s.cfg.ConnsPerServer
			s.mu.Unlock()
		}
		p.mu.Unlock()
	}
}

// sharedClient is a Client of cfg's tables on db, a pool its sites share
// (Sites, SiteClients): its Close leaves db open. With a database, db is a
// pool of the server's and every statement names that database's tables
// (store.NewIn); with none, db's connections are in the tables' database.
func sharedClient(cfg Config, tables store.Tables, db *sqlx.DB, database string, info store.ServerInfo) (*Client, error) {
	var st *store.Store
	var err error
	if database != "" {
		st, err = store.NewIn(db, database, tables, cfg.Clock)
	} else {
		st, err = store.New(db, tables, cfg.Clock)
	}
	if err != nil {
		return nil, err
	}
	reg := sessions.New(st, sessions.Config{StaleAfter: cfg.WorkerStaleAfter, Logger: cfg.Logger, Clock: cfg.Clock})
	return &Client{storeDoor: clientstore.NewDoor(st), cfg: cfg, db: db, store: st, log: cfg.Logger, server: info, sessions: reg, sharedDB: true}, nil
}
