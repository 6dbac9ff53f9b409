package queuety

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// SiteJobCount is a count of one site's jobs of one queue in one status.
type SiteJobCount struct {
	Queue  string `json:"queue"`
	Status string `json:"status"`
	N      int    `json:"n"`
}

// SiteJobs is what Sites.OpenJobs read of one started site: its open jobs
// (pending, processing, failed, buried) by queue and status, or why they
// could not be read.
type SiteJobs struct {
	Jobs []SiteJobCount
	Err  error
}

// Totals sums the counts by status.
func (j SiteJobs) Totals() map[string]int {
	out := map[string]int{}
	for _, c := range j.Jobs {
		out[c.Status] += c.N
	}
	return out
}

// DefaultOpenJobsCacheFor is how long Sites.OpenJobs reuses a read.
const DefaultOpenJobsCacheFor = 2 * time.Second

// openJobs is Sites.OpenJobs's last read, shared by its callers (a
// scrape, /sites) within DefaultOpenJobsCacheFor.
type openJobs struct {
	mu   sync.Mutex
	at   time.Time
	jobs map[string]SiteJobs
}

// OpenJobs counts the open jobs of every started site: one statement for
// the sites of each database server (a failing one sent again for each
// database, so a dropped database fails only its own sites), reused for
// DefaultOpenJobsCacheFor, so scrapes and probes cost one read between
// them. A site that is not started is not in the answer.
func (s *Sites) OpenJobs(ctx context.Context) map[string]SiteJobs {
	c := &s.openJobs
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < DefaultOpenJobsCacheFor {
		return c.jobs
	}
	looks, _ := s.serverLooks()
	out := map[string]SiteJobs{}
	for _, l := range looks {
		s.openJobsOf(ctx, l, out)
	}
	if ctx.Err() == nil { // a caller that gave up must not leave its failures to the others
		c.at, c.jobs = time.Now(), out
	}
	return out
}

// openJobsOf reads the open jobs of the sites on l's server into out.
func (s *Sites) openJobsOf(ctx context.Context, l *serverLook, out map[string]SiteJobs) {
	targets := s.targets(l)
	if len(targets) == 0 {
		return
	}
	// Each read its own timeout (batchReadTimeout): the fallbacks must
	// not run on the ctx of a batch that timed out behind one locked table.
	read := func(group []lookTarget) error {
		rctx, cancel := context.WithTimeout(ctx, batchReadTimeout)
		defer cancel()
		jobs, err := store.OpenJobsAcross(rctx, l.db, tableParts(group))
		if err != nil {
			return err
		}
		for i, t := range group {
			counts := make([]SiteJobCount, len(jobs[i]))
			for k, j := range jobs[i] {
				counts[k] = SiteJobCount{Queue: j.Queue, Status: j.Status, N: int(j.N)}
			}
			slices.SortFunc(counts, func(a, b SiteJobCount) int {
				if c := strings.Compare(a.Queue, b.Queue); c != 0 {
					return c
				}
				return strings.Compare(a.Status, b.Status)
			})
			out[t.r.site.Name] = SiteJobs{Jobs: counts}
		}
		return nil
	}
	if read(targets) == nil {
		return
	}
	// Then each database alone, and each site of a database that fails
	// alone: a subsite whose table is gone must not hide its neighbours'
	// counts. Only a failing read costs these statements.
	for _, group := range groupByDatabase(targets) {
		if read(group) == nil {
			continue
		}
		for _, t := range group {
			if err := read([]lookTarget{t}); err != nil {
				out[t.r.site.Name] = SiteJobs{Err: err}
			}
		}
	}
}

// SitesServer is one database server's batched look, as Sites.Servers
// reports it: counted since the look started (its first site's start).
type SitesServer struct {
	// Server is its user and address, never its password.
	Server string `json:"server"`
	// Sites are its started sites, looked at together.
	Sites       int           `json:"sites"`
	Looks       uint64        `json:"looks"`
	LookErrors  uint64        `json:"look_errors"`
	LookTime    time.Duration `json:"look_time_ns"`
	LastLookErr string        `json:"last_look_error,omitempty"`
	// Conns are the connections open to it now: its sites' shared pool's
	// and the look's (their connections are in no database, so the
	// server's processlist cannot tell them from others).
	Conns int `json:"connections"`
}

// lookCounts are one server look's counters (Sites.Servers).
type lookCounts struct {
	looks, errors atomic.Uint64
	nanos         atomic.Int64
	lastErr       atomic.Pointer[string]
}

// count records one batched look that took d and failed with err (nil:
// it answered).
func (c *lookCounts) count(d time.Duration, err error) {
	c.looks.Add(1)
	c.nanos.Add(int64(d))
	if err != nil {
		c.errors.Add(1)
		msg := err.Error()
		c.lastErr.Store(&msg)
		return
	}
	c.lastErr.Store(nil)
}

// serverLooks are the looks of every database server, with the
// connections open on each server (its look's and its shared pool's).
func (s *Sites) serverLooks() (looks []*serverLook, conns map[*serverLook]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	looks = make([]*serverLook, 0, len(s.servers))
	conns = make(map[*serverLook]int, len(s.servers))
	for server, l := range s.servers {
		looks = append(looks, l)
		conns[l] = l.db.Stats().OpenConnections
		if p := s.pools[server]; p != nil {
			conns[l] += p.db.Stats().OpenConnections
		}
	}
	return looks, conns
}

// Servers reports every database server's batched look, by server.
func (s *Sites) Servers() []SitesServer {
	looks, conns := s.serverLooks()
	out := make([]SitesServer, 0, len(looks))
	for _, l := range looks {
		sv := SitesServer{Server: store.ServerName(l.dsn), Sites: len(s.targets(l)), Looks: l.counts.looks.Load(),
			LookErrors: l.counts.errors.Load(), LookTime: time.Duration(l.counts.nanos.Load()), Conns: conns[l]}
		if e := l.counts.lastErr.Load(); e != nil {
			sv.LastLookErr = *e
		}
		out = append(out, sv)
	}
	slices.SortFunc(out, func(a, b SitesServer) int { return strings.Compare(a.Server, b.Server) })
	return out
}
