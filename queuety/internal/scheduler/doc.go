// Package scheduler is the plugin's Scheduler::tick and the loop that runs
// it inside `work`: each due row of the schedules table is locked, decided
// (dispatch, skip or wait, by its overlap policy) and committed with its
// job in one transaction, so however many daemons and PHP workers tick
// the table, each due run is dispatched once.
//
// The expressions themselves (intervals, the plugin's cron) are parsed and
// computed in internal/schedule; the Client's schedule API (add, list,
// remove, tick) stays in queuety and calls Tick.
package scheduler
