// Package maintenance holds the worker's housekeeping loops, each a
// startstop.Loop built from one params struct (River's
// internal/maintenance, asynq's one params struct per loop):
//
//   - Rescuer: the stale sweep, on a cron schedule and once at start;
//   - Retention: the retention sweep, on a cron schedule and once at start;
//   - DeadlineChecker: workflows past their deadline_at, every interval;
//   - WaitSweeper and SignalPoller: the workflow engine's lost wake-ups.
//
// A loop reaches what it maintains through the functions of its params
// (the Client's sweeps, adapted by the composition root in queuety), never
// a Worker or a Client. Every round takes the loop's ctx, cancelled by
// Stop, and derives its timeout from it; every loop ticks on the injected
// clock, cron-shaped ones too (the clock gives the time, the cron spec
// only the next run). Each has RunOnce for tests, and test signals, and
// gives its Loop to an owner that kicks its rounds itself (queuety.Sites
// runs a round only for the sites whose batched look found work).
package maintenance
