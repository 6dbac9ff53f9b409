// Package poolset keeps the PHP pools (queuety/internal/phppool) of the
// many sites one daemon serves (queuety work --network/--sites --php).
//
// A site is attached with a key and gets a Handle, which is its registry's
// fallback: the queuety.Handler, workflow step runner, callable runner,
// class caller and class-settings source of a PHP pool. Sites attached
// under one key share one pool. Nothing starts at Attach:
//
//   - On demand: a site's pool starts with the first call that needs PHP
//     (a job or step no Go handler takes, or the read of a PHP class's
//     settings the claim does before it takes such a job). The caller waits
//     for the start, the claimed job still held; its time limit is not
//     running yet (the pool starts it when a process takes the job). A
//     start that fails fails the call with its reason, and calls within
//     Config.Retry after it fail at once with the same reason, so a broken
//     command is not started again for every job of a backlog. Once
//     downAfter starts in a row failed (the first and its retry), the
//     StartError is queuety.ErrPHPDown: a drain (flush, --stop-when-empty)
//     no longer waits for the site's jobs that need PHP; a start that
//     succeeds clears the count.
//   - Reaped when idle: a pool with no call for Config.Idle is stopped; the
//     next call starts it again. The class settings read for a key are
//     kept across its pool's restarts (a pool's own cache goes with it):
//     the claim and the workflow engine ask for them with row locks held,
//     and must not wait for a pool to start there.
//   - Never with row locks held: a call marked workflow.WithRowLocks (the
//     engine's reads of class settings and for_each reducers in a
//     transaction) neither starts the pool nor waits for a place, and
//     answers workflow.ErrPHPNotReady when the pool is not running or the
//     class is not read yet; the engine rolls back, reads the class or
//     takes Hold (the pool kept running) with no row locked, and tries
//     again.
//   - Capped: at most Config.Max pools are alive (starting, running or
//     stopping). A site that needs one at the cap queues; the sites in the
//     queue get places in arrival order. Room is made by stopping, least
//     recently used first, a pool that is idle (no call for a second, or
//     its turn is over), else by draining the pool that has had its turn
//     (Config.Turn since it started) the longest: it takes no new job and
//     stops once the calls it runs are done, and its site queues behind
//     the others for its next turn. So a site with a backlog cannot keep a
//     place from the sites waiting, and a place changes hands at most once
//     a Turn.
//   - A pool that gives up (its processes kept crashing) is stopped and
//     started again, on demand, after Config.Retry: with many sites the
//     daemon does not exit for one site's broken PHP, as it does for one
//     site.
//
// Status reports each site's pool: none, waiting, starting, running,
// idle, draining, stopping, or failed.
package poolset
