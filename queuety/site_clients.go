package queuety

import (
	"context"
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
	// ConnsPerDatabase is the connections the sites of one database share
	// (default 2: a reader of many sites sends a statement at a time per
	// page); a connection idle for a minute is closed.
	ConnsPerDatabase int
	// MaxConns caps them over every database (default
	// DefaultSitesMaxConns): a database past it is not opened.
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
// database share one connection pool, and a Client's Close leaves it open;
// Close closes them all.
type SiteClients struct {
	cfg SiteClientsConfig

	mu      sync.Mutex
	dbs     map[string]*clientsDB  // by DSN
	clients map[string]*openClient // by site name
	conns   int                    // connections promised to open dbs
}

// clientsDB is one database's pool, opened on first use.
type clientsDB struct {
	mu      sync.Mutex // held while opening
	db      *sqlx.DB
	info    store.ServerInfo
	err     error // the last open's failure
	retryAt time.Time
}

// openClient is a site's Client and what it was opened for: a site whose
// database or tables change on a re-read gets a new one.
type openClient struct {
	dsn, jobs string
	client    *Client
}

// NewSiteClients fills in cfg's defaults.
func NewSiteClients(cfg SiteClientsConfig) *SiteClients {
	if cfg.ConnsPerDatabase <= 0 {
		cfg.ConnsPerDatabase = 2
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultSitesMaxConns
	}
	defDur(&cfg.Retry, DefaultSitesRetry)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &SiteClients{cfg: cfg, dbs: map[string]*clientsDB{}, clients: map[string]*openClient{}}
}

// Client returns site's Client, opening its database's pool on first use.
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
	s.mu.Lock()
	if c, ok := s.clients[site.Name]; ok && c.dsn == cfg.DSN && c.jobs == tables["jobs"] {
		s.mu.Unlock()
		return c.client, nil
	}
	d, ok := s.dbs[cfg.DSN]
	if !ok {
		d = &clientsDB{}
		s.dbs[cfg.DSN] = d
	}
	s.mu.Unlock()
	db, info, err := s.open(ctx, d, cfg)
	if err != nil {
		return nil, err
	}
	client, err := sharedClient(cfg, tables, db, "", info)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[site.Name] = &openClient{dsn: cfg.DSN, jobs: tables["jobs"], client: client}
	return client, nil
}

// open returns d's pool, opening it unless it failed within Retry.
func (s *SiteClients) open(ctx context.Context, d *clientsDB, cfg Config) (*sqlx.DB, store.ServerInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db != nil {
		return d.db, d.info, nil
	}
	if d.err != nil && time.Now().Before(d.retryAt) {
		return nil, d.info, d.err
	}
	db, info, err := s.connect(ctx, cfg)
	if err != nil {
		d.err, d.retryAt = err, time.Now().Add(s.cfg.Retry)
		return nil, info, err
	}
	d.db, d.info, d.err = db, info, nil
	return db, info, nil
}

func (s *SiteClients) connect(ctx context.Context, cfg Config) (*sqlx.DB, store.ServerInfo, error) {
	s.mu.Lock()
	spent := s.conns+s.cfg.ConnsPerDatabase > s.cfg.MaxConns
	if !spent {
		s.conns += s.cfg.ConnsPerDatabase
	}
	s.mu.Unlock()
	if spent {
		return nil, store.ServerInfo{}, fmt.Errorf("connection budget spent: %d connections for each database, at most %d in all", s.cfg.ConnsPerDatabase, s.cfg.MaxConns)
	}
	giveBack := func() {
		s.mu.Lock()
		s.conns -= s.cfg.ConnsPerDatabase
		s.mu.Unlock()
	}
	info, err := store.InspectServer(ctx, cfg.DSN, s.cfg.Logger)
	if err == nil {
		err = info.CheckServer(cfg.AllowNonUTC)
	}
	if err != nil {
		giveBack()
		return nil, info, err
	}
	db, err := store.Open(ctx, cfg.DSN, s.cfg.ConnsPerDatabase, s.cfg.Logger)
	if err != nil {
		giveBack()
		return nil, info, err
	}
	// A reader visits most databases now and then (an overview of every
	// site): their connections go back once it moves on.
	db.SetConnMaxIdleTime(time.Minute)
	return db, info, nil
}

// Keep forgets the Clients of the sites not in keep (sites gone at a
// re-read) and closes the pools no kept site uses.
func (s *SiteClients) Keep(keep []Site) {
	kept := map[string]bool{}
	used := map[string]bool{}
	for _, site := range keep {
		kept[site.Name] = true
		used[site.Config.DSN] = true
	}
	s.mu.Lock()
	for name := range s.clients {
		if !kept[name] {
			delete(s.clients, name)
		}
	}
	var gone []*clientsDB
	for dsn, d := range s.dbs {
		if !used[dsn] {
			gone = append(gone, d)
			delete(s.dbs, dsn)
		}
	}
	s.mu.Unlock()
	s.closeDBs(gone)
}

// Close closes every pool; the Clients handed out stop working.
func (s *SiteClients) Close() error {
	s.Keep(nil)
	return nil
}

// closeDBs closes pools no longer listed. Each one's lock is taken before
// s.mu, as open does: an open under way finishes, then its pool is closed.
func (s *SiteClients) closeDBs(gone []*clientsDB) {
	for _, d := range gone {
		d.mu.Lock()
		if d.db != nil {
			_ = d.db.Close()
			d.db = nil
			s.mu.Lock()
			s.conns -= s.cfg.ConnsPerDatabase
			s.mu.Unlock()
		}
		d.mu.Unlock()
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
