package chaos

import (
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/queuety-go/queuety/internal/testdb"
)

// Round a: three workers drain 2,000 jobs; at a random moment one of them
// is SIGKILLed and a new one started in its place. The stale sweep (3 s,
// every second) hands the killed worker's jobs back.
func TestChaosKillWorker(t *testing.T) {
	dsn := testdb.New(t)
	db := prepare(t, dsn)
	const jobs = 2000
	var total tally
	n := rounds(t, 2)
	for round := 1; round <= n; round++ {
		reset(t, db)
		insertJobs(t, db, jobs)
		f := newFleet(t, dsn)
		ws := make([]*proc, 3)
		for i := range ws {
			ws[i] = f.worker(fmt.Sprintf("kill-r%d-w%d", round, i), dsn)
		}
		// A random moment of the drain: after 5-60% of the jobs completed.
		at := jobs * (5 + mrand.IntN(56)) / 100
		waitUntil(t, f, 120*time.Second, func() bool { return completed(t, db) >= at })
		victim := mrand.IntN(len(ws))
		ws[victim].kill(t)
		f.worker(fmt.Sprintf("kill-r%d-w%d-restarted", round, victim), dsn)
		ok := drain(t, db, f, jobs, 180*time.Second)
		f.stopAll(15 * time.Second)
		tl := count(t, db, f.killedNames())
		if !ok {
			t.Logf("round %d: drain timed out", round)
		}
		check(t, fmt.Sprintf("kill round %d (%s, pid %d, killed at %d completed)", round, ws[victim].name, ws[victim].cmd.Process.Pid, at), tl)
		total.add(tl)
	}
	t.Logf("kill -9 worker, %d rounds: %s", n, total)
}

// waitUntil polls cond every 20 ms for up to d, failing when a process
// exits that the suite did not kill, or at the deadline.
func waitUntil(t *testing.T, f *fleet, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		f.requireAlive()
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Round b: two workers drain 3,000 jobs from a private MariaDB that is
// SIGKILLed at a random moment and restarted after 0.5-3 s. The daemons
// must never exit, and every job must end completed, once.
func TestChaosKillMariaDB(t *testing.T) {
	m := newMariaDB(t)
	dsn := m.createDB(t, "chaos")
	const jobs = 3000
	var total tally
	n := rounds(t, 1)
	for round := 1; round <= n; round++ {
		db := prepare(t, dsn)
		reset(t, db)
		insertJobs(t, db, jobs)
		f := newFleet(t, dsn)
		for i := range 2 {
			f.worker(fmt.Sprintf("mdb-r%d-w%d", round, i), dsn)
		}
		at := jobs * (10 + mrand.IntN(50)) / 100
		waitUntil(t, f, 120*time.Second, func() bool { return completed(t, db) >= at })
		m.kill(t)
		down := time.Duration(500+mrand.IntN(2500)) * time.Millisecond
		time.Sleep(down)
		f.requireAlive()
		m.start(t)
		ok := drain(t, db, f, jobs, 180*time.Second)
		f.stopAll(15 * time.Second)
		if !ok {
			t.Logf("round %d: drain timed out", round)
		}
		tl := count(t, db, f.killedNames())
		check(t, fmt.Sprintf("mariadb kill round %d (kill at %d completed, down %s)", round, at, down), tl)
		total.add(tl)
		_ = db.Close()
	}
	t.Logf("kill -9 mariadbd, %d rounds: %s", n, total)
}
