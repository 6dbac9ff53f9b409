package queuety

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// A Sites run from system cron stops on its own, as one worker does
// (worker_limits.go): once its sites took MaxJobs jobs in all and finished
// them, or once every site it serves has nothing left it can claim
// (StopWhenEmpty; with each site's Config.MaxJobs 1, `work --once` on
// every site). The stop is the graceful one of the end of Run's ctx.
// A site whose PHP cannot run (Worker.PHPDown: its pool failed to start
// again at its retry) has nothing left it can claim but the rows waiting
// for PHP; the drain ends without them and the summary names the site
// with why, as it names a site that could not be started. So does a site
// whose database stopped answering during the run (SiteUnreachable): its
// claim rounds fail, so it would never drain, and the drain ends without
// its rows.

// SiteSummary is one site's part of a Sites run.
type SiteSummary struct {
	Name  string      `json:"site"`
	Stats WorkerStats `json:"stats"`
	// Error says why the site was not served when the run ended: it could
	// not be started, its settings are refused, its database does not
	// answer, or its PHP cannot run (ErrPHPDown), its rows waiting for PHP
	// left pending.
	Error string `json:"error,omitempty"`
}

// SitesSummary is what a Sites run did.
type SitesSummary struct {
	// Stopped is why Run returned on its own: "empty" (StopWhenEmpty) or
	// "max-jobs"; "" when its ctx ended.
	Stopped string        `json:"stopped,omitempty"`
	Sites   []SiteSummary `json:"sites"`
}

// NotServed names the sites that were not served when the run ended.
func (s SitesSummary) NotServed() []string {
	var out []string
	for _, site := range s.Sites {
		if site.Error != "" {
			out = append(out, site.Name)
		}
	}
	return out
}

// total adds up every site's counts.
func (s SitesSummary) total() WorkerStats {
	var t WorkerStats
	for _, site := range s.Sites {
		t = addStats(t, site.Stats)
	}
	return t
}

// limitsTicker paces limitReached: nil (never) without limits.
func (s *Sites) limitsTicker() (<-chan time.Time, func()) {
	if s.budget == nil && !s.cfg.StopWhenEmpty {
		return nil, func() {}
	}
	t := time.NewTicker(min(s.cfg.LookInterval, 50*time.Millisecond))
	return t.C, t.Stop
}

// limitReached says why every site should stop now, or "". Called on Run's
// goroutine, so no site is being started meanwhile. A site that could not
// be started is not waited for, nor one whose database does not answer:
// nothing of it would drain.
func (s *Sites) limitReached() string {
	s.mu.Lock()
	runs := slices.Collect(maps.Values(s.sites))
	s.mu.Unlock()
	var workers []*Worker
	for _, r := range runs {
		r.mu.Lock()
		if r.worker != nil && r.state != SiteUnreachable {
			workers = append(workers, r.worker)
		}
		r.mu.Unlock()
	}
	idle, drained := true, true
	for _, w := range workers {
		idle = idle && w.jobs.busy() == 0
		// Every worker is asked: Drained has one that looked once look
		// again now.
		drained = w.Drained() && drained
	}
	switch {
	case s.budget != nil && s.budget.spent() && idle:
		return "max-jobs"
	case s.cfg.StopWhenEmpty && drained:
		return "empty"
	}
	return ""
}

// noteStopped adds a stopped worker's counts to its site's summary (a site
// restarted with new settings has had several workers).
func (s *Sites) noteStopped(name string, st WorkerStats) {
	s.endedMu.Lock()
	defer s.endedMu.Unlock()
	e := s.ended[name]
	if e == nil {
		e = &SiteSummary{Name: name}
		s.ended[name] = e
	}
	e.Stats = addStats(e.Stats, st)
}

// noteNotServed records, as Run ends, the sites it was not serving and
// why: those without a worker, those whose database does not answer, and
// those whose worker's PHP cannot run, whose rows waiting for it are left
// pending.
func (s *Sites) noteNotServed(runs []*siteRun) {
	s.endedMu.Lock()
	defer s.endedMu.Unlock()
	for _, r := range runs {
		r.mu.Lock()
		worker, state, err := r.worker, r.state, r.err
		r.mu.Unlock()
		switch {
		case worker == nil:
		case state == SiteUnreachable:
			s.log.Warn("sites: a site's database does not answer; its jobs stay as they are", "site", r.site.Name, "err", err)
		default:
			if err = worker.PHPDown(); err == nil {
				continue
			}
			s.log.Warn("sites: a site's PHP cannot run; its jobs waiting for it stay pending", "site", r.site.Name, "err", err)
		}
		e := s.ended[r.site.Name]
		if e == nil {
			e = &SiteSummary{Name: r.site.Name}
			s.ended[r.site.Name] = e
		}
		e.Error = "not served"
		if err != nil {
			e.Error = err.Error()
		}
	}
}

// Summary reports the run: each site's counts over the workers it had
// (those still running included), and, once Run returned, why it stopped
// and which sites were not served at the end.
func (s *Sites) Summary() SitesSummary {
	s.endedMu.Lock()
	byName := map[string]SiteSummary{}
	for name, e := range s.ended {
		byName[name] = *e
	}
	why := s.stopWhy
	s.endedMu.Unlock()
	for _, st := range s.Status() {
		if st.Stats == nil {
			continue
		}
		e := byName[st.Name]
		e.Name = st.Name
		e.Stats = addStats(e.Stats, *st.Stats)
		byName[st.Name] = e
	}
	out := SitesSummary{Stopped: why, Sites: slices.Collect(maps.Values(byName))}
	slices.SortFunc(out.Sites, func(a, b SiteSummary) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func addStats(a, b WorkerStats) WorkerStats {
	a.Claimed += b.Claimed
	a.Completed += b.Completed
	a.Retried += b.Retried
	a.Buried += b.Buried
	a.HandedBack += b.HandedBack
	a.Refused += b.Refused
	a.Chained += b.Chained
	a.ClaimRounds += b.ClaimRounds
	a.IdleLooks += b.IdleLooks
	a.ClaimRollbacks += b.ClaimRollbacks
	a.Running += b.Running
	return a
}
