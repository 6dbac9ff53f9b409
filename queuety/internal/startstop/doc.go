// Package startstop is the one shape of every background loop of a
// worker: a Service starts, fails only before anything runs, and stops
// waiting for a round under way; a Loop runs a round at start and then on
// the times of its Schedule, read from an injected clock.Clock, so a test
// moves time by hand instead of sleeping. A round always gets the loop's
// context, cancelled by Stop: a round derives its timeouts from it and
// never starts a context of its own.
//
// Tests wait on a Loop's signals (Signal) instead of sleeping: the round
// it finished, the time it waits for next.
package startstop
