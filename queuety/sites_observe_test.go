package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestSitesOpenJobs: the open jobs of every started site of two databases
// on one server are counted, each site's its own; a subsite whose jobs
// table is gone reports why while its neighbours in the same database keep
// their counts; the server's batched look is counted.
func TestSitesOpenJobs(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := testdb.New(t), testdb.New(t)
	a := siteClient(t, dsnA, "wp_")
	b := siteClient(t, dsnB, "wp_")
	b2 := siteClient(t, dsnB, "wp_2_")
	// Nothing serves "count" (the sites serve another handler): the jobs
	// stay pending.
	dispatchToSite(t, a, "a", 3)
	dispatchToSite(t, b2, "b2", 2)
	j, err := b2.Dispatch(context.Background(), "count", nil, OnQueue("mail"))
	require.NoError(t, err)
	require.NoError(t, b2.BuryJob(context.Background(), j.ID, "by hand"))
	site := func(name, dsn, prefix string) Site {
		return Site{Name: name, Config: Config{DSN: dsn, TablePrefix: prefix, RescueSchedule: "off", ShutdownGrace: 5 * time.Second, Logger: testLogger()}}
	}
	s := runSites(t, SitesConfig{
		Discover: func(context.Context) ([]Site, error) {
			return []Site{site("a", dsnA, "wp_"), site("b", dsnB, "wp_"), site("b2", dsnB, "wp_2_")}, nil
		},
		Registry: func(Site) (*Registry, error) {
			reg := NewRegistry()
			reg.Register("unused", HandlerFunc(func(context.Context, *Job) error { return nil }))
			return reg, nil
		},
		LookInterval: 10 * time.Millisecond,
	})
	<-s.Started()
	ctx := context.Background()
	jobs := s.OpenJobs(ctx)
	require.Equal(t, map[string]SiteJobs{
		"a":  {Jobs: []SiteJobCount{{Queue: "default", Status: "pending", N: 3}}},
		"b":  {Jobs: []SiteJobCount{}},
		"b2": {Jobs: []SiteJobCount{{Queue: "default", Status: "pending", N: 2}, {Queue: "mail", Status: "buried", N: 1}}},
	}, jobs)
	require.Equal(t, map[string]int{"pending": 2, "buried": 1}, jobs["b2"].Totals())

	waitFor(t, time.Minute, "the server's looks counted", func() bool {
		sv := s.Servers()
		return len(sv) == 1 && sv[0].Looks > 0
	})
	sv := s.Servers()[0]
	require.Equal(t, 3, sv.Sites)
	require.NotContains(t, sv.Server, "@tcp(", "a name, not the DSN")
	require.Positive(t, sv.LookTime)
	for _, st := range s.Status() {
		require.Positive(t, st.Slots, st.Name)
	}

	admin, err := sqlx.Open("mysql", dsnB)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	_, err = admin.Exec("RENAME TABLE wp_2_queuety_jobs TO wp_2_gone")
	require.NoError(t, err)
	dispatchToSite(t, b, "b", 4)
	waitFor(t, time.Minute, "b2's error, b's new jobs", func() bool {
		jobs = s.OpenJobs(ctx)
		return jobs["b2"].Err != nil && len(jobs["b"].Jobs) == 1
	})
	require.ErrorContains(t, jobs["b2"].Err, "wp_2_queuety_jobs")
	require.Equal(t, []SiteJobCount{{Queue: "default", Status: "pending", N: 4}}, jobs["b"].Jobs)
	require.Equal(t, []SiteJobCount{{Queue: "default", Status: "pending", N: 3}}, jobs["a"].Jobs)
	waitFor(t, time.Minute, "the failed look counted", func() bool { return s.Servers()[0].LookErrors > 0 })
}
